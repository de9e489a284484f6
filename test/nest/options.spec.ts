// Nested option objects are checked like top-level ones: a misspelt key fails startup, naming the
// key and the keys that are known, instead of being ignored while its default applies.
import { describe, expect, it } from 'vitest';
import { Test } from '@nestjs/testing';
import { Workflow, WorkflowsModule, type WorkflowContext, type WorkflowOptions } from '../../src/index.js';

async function boot(options: Parameters<typeof WorkflowsModule.forRoot>[0], providers: unknown[] = []) {
  const module = await Test.createTestingModule({
    imports: [WorkflowsModule.forRoot(options)],
    providers: providers as never[],
  }).compile();
  await module.init();
  return module;
}

function workflowWith(options: WorkflowOptions) {
  @Workflow('options.check', options)
  class Checked {
    async run(_ctx: WorkflowContext) {}
  }
  return Checked;
}

describe('nested module options', () => {
  it('refuses an unknown key inside worker, naming it and the known keys', async () => {
    await expect(boot({ worker: { leaseMs: 5000 } as never })).rejects.toThrow(
      'WorkflowsModule option "worker": unknown key "leaseMs". Known keys: enabled, id, concurrency, pollInterval, leaseDuration, heartbeatInterval, shutdownTimeout, replayCheck.',
    );
  });

  it('quotes a bad value that is a string, so "ten" reads as the text it is', async () => {
    await expect(boot({ worker: { concurrency: 'ten' as never } })).rejects.toThrow(
      'Invalid WorkflowsModule option "worker.concurrency": "ten". Use a whole number, 1 or more.',
    );
    await expect(boot({ retryAttempts: '' as never })).rejects.toThrow(
      'Invalid WorkflowsModule option "retryAttempts": "". Use a whole number, 0 or more.',
    );
    await expect(boot({ worker: { concurrency: 2.5 } })).rejects.toThrow('"worker.concurrency": 2.5. Use');
    await expect(boot({ retry: { attempts: 3, factor: '2' as never } })).rejects.toThrow(
      'Invalid WorkflowsModule option "retry".factor: "2". Use a number of at least 1',
    );
  });

  it('refuses an unknown key inside retry and journal', async () => {
    await expect(boot({ retry: { backof: '2s' } as never })).rejects.toThrow(
      'WorkflowsModule option "retry": unknown key "backof". Known keys: attempts, backoff, factor, maxBackoff.',
    );
    await expect(boot({ journal: { maxEntrie: 5 } as never })).rejects.toThrow(
      /option "journal": unknown key "maxEntrie". Known keys: warnEntries, warnBytes, maxEntries, maxBytes/,
    );
  });

  it('still takes every documented key', async () => {
    const module = await boot({
      worker: {
        enabled: false,
        id: 'w1',
        concurrency: 2,
        pollInterval: '1s',
        leaseDuration: '30s',
        heartbeatInterval: '10s',
        shutdownTimeout: '1s',
      },
      retry: { attempts: 2, backoff: '1s', factor: 2, maxBackoff: '1m' },
      journal: { warnEntries: 10, warnBytes: 1000, maxEntries: 100, maxBytes: 10_000 },
    });
    await module.close();
  });
});

describe('@Workflow options', () => {
  for (const [label, options, message] of [
    [
      'a top-level key',
      { timout: '1d' },
      /@Workflow\('options\.check'\) on Checked options: unknown key "timout". Known keys: version, timeout, retry/,
    ],
    ['retry', { retry: { backof: '2s' } }, /retry of @Workflow\('options\.check'\) on Checked: unknown key "backof"/],
    ['concurrency', { concurrency: { perkey: 1 } }, /concurrency: unknown key "perkey". Known keys: limit, perKey/],
    [
      'rateLimit',
      { rateLimit: { perkey: { max: 1, duration: '1s' } } },
      /rateLimit: unknown key "perkey". Known keys: limit, perKey/,
    ],
    [
      'a rate window',
      { rateLimit: { limit: { max: 1, duration: '1s', burst: 2 } } },
      /rateLimit\.limit: unknown key "burst". Known keys: max, duration/,
    ],
    [
      'a schedule',
      { schedules: [{ every: '1m', timeZone: 'UTC' }] },
      /schedules\[0\]: unknown key "timeZone". Known keys: id, cron, every, timezone/,
    ],
  ] as const) {
    it(`fails startup on an unknown key in ${label}`, async () => {
      await expect(boot({ worker: false }, [workflowWith(options as unknown as WorkflowOptions)])).rejects.toThrow(
        message,
      );
    });
  }
});
