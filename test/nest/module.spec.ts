// WorkflowsModule in a Nest application: its options (forRoot, forRootAsync), the discovery of
// @Workflow providers with their injected dependencies, and the definitions refused at startup.
import { afterEach, describe, expect, it } from 'vitest';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  type WorkflowContext,
} from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';

let app: TestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function boot(options: Parameters<typeof WorkflowsModule.forRoot>[0], providers: unknown[] = []) {
  const module = await Test.createTestingModule({
    imports: [WorkflowsModule.forRoot(options)],
    providers: providers as never[],
  }).compile();
  await module.init();
  return module;
}

describe('module options', () => {
  it('names the option that is wrong', async () => {
    await expect(boot({ worker: { pollInterval: '5 parsecs' } })).rejects.toThrow(/worker\.pollInterval/);
    await expect(boot({ worker: { concurrency: 0 } })).rejects.toThrow(/worker\.concurrency/);
    await expect(boot({ worker: { leaseDuration: '30s', heartbeatInterval: '40s' } })).rejects.toThrow(
      /heartbeatInterval.*below worker\.leaseDuration/,
    );
    await expect(boot({ retry: { attempts: 0 } })).rejects.toThrow(/retry.*attempts/);
    await expect(boot({ journal: { maxEntries: -5 } })).rejects.toThrow(/journal\.maxEntries/);
    await expect(boot({ store: {} as never })).rejects.toThrow(/option "store"/);
    await expect(boot({ nope: true } as never)).rejects.toThrow(/Unknown WorkflowsModule option "nope"/);
  });

  it('refuses the in-memory store in production unless allowed', async () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await expect(boot({ worker: false })).rejects.toThrow(
        /in-memory store with NODE_ENV=production.*allowInMemoryStorage/,
      );
      const module = await boot({ worker: false, allowInMemoryStorage: true });
      await module.close();
    } finally {
      process.env.NODE_ENV = previous;
    }
  });

  it('refuses a retryAttempts that is not a whole number', async () => {
    const compiling = Test.createTestingModule({ imports: [WorkflowsModule.forRoot({ retryAttempts: -1 })] }).compile();
    await expect(compiling).rejects.toThrow(/option "retryAttempts": -1. Use a whole number/);
  });

  it('takes options from forRootAsync with imports, inject and useFactory, and a store class', async () => {
    @Injectable()
    class Settings {
      concurrency = 3;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}
    const module = await Test.createTestingModule({
      imports: [
        WorkflowsModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => ({
            store: InMemoryWorkflowStore,
            worker: { enabled: false, concurrency: settings.concurrency },
          }),
        }),
      ],
    }).compile();
    await module.init();
    expect(module.get(WorkflowClient)).toBeInstanceOf(WorkflowClient);
    await module.close();
  });
});

describe('discovery', () => {
  it("finds a @Workflow provider and gives it its constructor's dependencies", async () => {
    @Injectable()
    class Greeter {
      greet(name: string): string {
        return `hello ${name}`;
      }
    }
    @Workflow('discovery.greet')
    class Greet {
      constructor(private readonly greeter: Greeter) {}
      async run(ctx: WorkflowContext, name: string) {
        return ctx.step('greet', () => this.greeter.greet(name));
      }
    }
    app = await createTestApp([Greeter, Greet]);
    const handle = await app.client.start(Greet, 'ada');
    expect(await app.worker.drain()).toBe(1);
    expect(await handle.result()).toBe('hello ada');
  });
});

describe('definitions refused at startup', () => {
  it('refuses two classes with the same name and version, naming both', async () => {
    @Workflow('dup.flow')
    class A {
      async run() {}
    }
    @Workflow('dup.flow')
    class B {
      async run() {}
    }
    await expect(boot({ worker: false }, [A, B])).rejects.toThrow(
      /on B and A both declare workflow "dup.flow" version 1/,
    );
  });

  it('refuses bad options, naming the class and the option', async () => {
    @Workflow('bad.timeout', { timeout: 'soon' })
    class BadTimeout {
      async run() {}
    }
    await expect(boot({ worker: false }, [BadTimeout])).rejects.toThrow(
      /timeout of @Workflow\('bad.timeout'\) on BadTimeout: "soon"/,
    );
    @Workflow('bad.schedule', { schedules: [{ cron: 'every day' }] })
    class BadSchedule {
      async run() {}
    }
    await expect(boot({ worker: false }, [BadSchedule])).rejects.toThrow(
      /BadSchedule: schedules\[0\] \("bad.schedule"\): invalid cron 'every day'/,
    );
    @Workflow('bad.concurrency', { concurrency: { perKey: 0 } })
    class BadConcurrency {
      async run() {}
    }
    await expect(boot({ worker: false }, [BadConcurrency])).rejects.toThrow(
      /BadConcurrency: invalid concurrency.perKey 0/,
    );
  });

  it('refuses a concurrency or rateLimit that is not an object, and a priority no store keeps', async () => {
    @Workflow('bad.concurrency-number', { concurrency: 5 as never })
    class ConcurrencyNumber {
      async run() {}
    }
    await expect(boot({ worker: false }, [ConcurrencyNumber])).rejects.toThrow(
      /ConcurrencyNumber: invalid concurrency 5\. Use \{ limit\?, perKey\? \}/,
    );
    @Workflow('bad.rate-number', { rateLimit: 10 as never })
    class RateNumber {
      async run() {}
    }
    await expect(boot({ worker: false }, [RateNumber])).rejects.toThrow(/RateNumber: invalid rateLimit 10/);
    @Workflow('bad.priority-range', { priority: 2 ** 40 })
    class PriorityRange {
      async run() {}
    }
    await expect(boot({ worker: false }, [PriorityRange])).rejects.toThrow(
      /PriorityRange: invalid priority 1099511627776\. Use a whole number from/,
    );
  });
});
