import { afterEach, describe, expect, it } from 'vitest';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InMemoryWorkflowStore,
  UnknownWorkflowError,
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  isWorkflowInputError,
  parseDuration,
  workflowErrorStatus,
  type WorkflowContext,
} from '../../src/index.js';
import { createTestApp, type TestApp } from './helpers.js';

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

describe('durations', () => {
  it('parses the documented forms', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('5s')).toBe(5_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration(42)).toBe(42);
    // Whole milliseconds (stored times are bigints): a fraction is rounded up, so a positive one stays positive.
    expect(parseDuration(1.5)).toBe(2);
    expect(parseDuration(0.25)).toBe(1);
    expect(parseDuration('1.5ms')).toBe(2);
  });

  it('refuses anything else with an error naming where it came from', () => {
    expect(() => parseDuration('5 parsecs', 'worker.pollInterval')).toThrow(
      /Invalid worker.pollInterval: "5 parsecs".*'1h30m'/,
    );
    expect(() => parseDuration(-1)).toThrow(/non-negative/);
    expect(() => parseDuration('')).toThrow(/Invalid duration/);
    expect(() => parseDuration(NaN)).toThrow(/Invalid duration/);
    // Past a Date's range now + duration is no longer a whole number a bigint keeps.
    expect(() => parseDuration(1e300)).toThrow(/at most 100,000,000 days/);
    expect(() => parseDuration('100000001d')).toThrow(/at most 100,000,000 days/);
    expect(parseDuration('100000000d')).toBe(8.64e15);
  });
});

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

describe('definitions', () => {
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

  it('refuses start() and signal() options that are not an object, and stores nothing', async () => {
    @Workflow('typo.not-object')
    class NotObject {
      async run() {}
    }
    app = await createTestApp([NotObject]);
    await expect(app.client.start(NotObject, {}, null as never)).rejects.toThrow(
      'start() options must be an object (or left out), got null.',
    );
    await expect(app.client.start(NotObject, {}, 'id-1' as never)).rejects.toThrow(
      'start() options must be an object (or left out), got string.',
    );
    await expect(app.client.signal('s', {}, [] as never)).rejects.toThrow(
      'signal() options must be an object (or left out), got an array.',
    );
    expect(await app.client.list({})).toEqual([]);
    expect(await app.store.signals({ name: 's', key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual([]);
  });

  it('refuses a misspelt start() or signal() option, and stores nothing', async () => {
    @Workflow('typo.flow')
    class Typo {
      async run() {}
    }
    app = await createTestApp([Typo]);
    await expect(app.client.start(Typo, {}, { concurencyKey: 'customer-1' } as never)).rejects.toThrow(
      /start\(\) options: unknown key "concurencyKey"\. Known keys: id, version, concurrencyKey/,
    );
    await expect(app.client.signal('typo.signal', 1, { Key: 'k' } as never)).rejects.toThrow(
      /signal\(\) options: unknown key "Key"/,
    );
    expect(await app.client.list()).toEqual([]);
    expect(
      await app.store.signals({ name: 'typo.signal', key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
    ).toEqual([]);
  });

  it('starting an unknown workflow says what is known and stores nothing', async () => {
    @Workflow('known.flow')
    class Known {
      async run() {}
    }
    app = await createTestApp([Known]);
    await expect(app.client.start('unknown.flow', {})).rejects.toThrow(UnknownWorkflowError);
    await expect(app.client.start('unknown.flow', {})).rejects.toThrow(/known: known.flow@1/);
    // As docs/workflows.md says: its own class, not an input error, and a 400 over HTTP all the same.
    const unknown = await app.client.start('unknown.flow', {}).catch((error: unknown) => error);
    expect(isWorkflowInputError(unknown)).toBe(false);
    expect(workflowErrorStatus(unknown)).toBe(400);
    await expect(app.client.start(Known, { big: 1n })).rejects.toThrow(/input.*BigInt/);
    expect(await app.client.list()).toEqual([]);
  });
});

describe('versions', () => {
  it('runs each instance on the version it started on, and a worker claims only the versions it has', async () => {
    const ran: string[] = [];
    @Workflow('versioned.flow', { version: 1 })
    class V1 {
      async run(ctx: WorkflowContext) {
        await ctx.sleep('s', '1m');
        ran.push('v1');
        return 1;
      }
    }
    @Workflow('versioned.flow', { version: 2 })
    class V2 {
      async run() {
        ran.push('v2');
        return 2;
      }
    }
    const store = new InMemoryWorkflowStore();
    app = await createTestApp([V1], { store });
    const old = await app.client.start('versioned.flow', null);
    await app.worker.drain();
    const clockAt = app.clock.now();
    await app.close();
    // A new deploy has both versions: new instances start on v2, the old one finishes on v1.
    app = await createTestApp([V1, V2], { store });
    app.clock.set(clockAt);
    const fresh = await app.client.start('versioned.flow', null);
    expect((await fresh.status()).version).toBe(2);
    app.clock.advance('1m');
    await app.worker.drain();
    expect([await old.result(), await fresh.result()]).toEqual([1, 2]);
    await app.close();
    // A process that only has v2 never claims a v1 instance.
    app = await createTestApp([V2], { store });
    app.clock.set(clockAt);
    await store.create({
      id: 'legacy',
      workflow: 'versioned.flow',
      version: 1,
      input: null,
      deadline: null,
      now: clockAt,
    });
    expect(await app.worker.drain()).toBe(0);
    expect(ran.sort()).toEqual(['v1', 'v2']);
  });
});

describe('journal limits', () => {
  it('warns once at the warn threshold and fails with WorkflowJournalLimitError at the max, after compensating', async () => {
    const undone: number[] = [];
    @Workflow('journal.loop')
    class Loop {
      async run(ctx: WorkflowContext) {
        for (let i = 0; ; i++) await ctx.step(`s${i}`, () => i, { compensate: () => undone.push(i) });
      }
    }
    app = await createTestApp([Loop], { journal: { warnEntries: 3, maxEntries: 5 } });
    const handle = await app.client.start(Loop, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error!.name).toBe('WorkflowJournalLimitError');
    expect(status.journal!.filter((e) => e.kind === 'step')).toHaveLength(5);
    expect(undone).toEqual([4, 3, 2, 1, 0]);
    expect(app.events.filter((e) => e.type === 'journal-large')).toHaveLength(1);
  });
});
