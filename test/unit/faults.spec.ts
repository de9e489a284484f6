import { afterEach, describe, expect, it, vi } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { describeStoreError, StoreOutage } from '../../src/runtime/store-outage.js';
import type { WorkflowWrite } from '../../src/storage/workflow-store.js';
import { systemClock } from '../../src/time/workflow-clock.js';
import { LeasedWorker, MAX_BACKOFF } from '../../src/leased-loop/leased-worker.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** What Node reports for a refused connection to `localhost`: an AggregateError with an empty message. */
function refused(): Error {
  const one = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  return Object.assign(new AggregateError([one], ''), { code: 'ECONNREFUSED' });
}

/** The in-memory store with a switch that makes writes fail as if the database were unreachable. */
class FlakyStore extends InMemoryWorkflowStore {
  down = false;
  async write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    if (this.down) throw refused();
    return super.write(id, token, write);
  }
}

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  vi.useRealTimers();
});

@Workflow('faults.three-steps')
class ThreeSteps {
  async run(ctx: WorkflowContext, n: number) {
    for (let i = 1; i <= 3; i++) await ctx.step(`s${i}`, () => n + i);
    return n;
  }
}

describe('store errors are not lost leases', () => {
  it('logs a write that fails because the database is unreachable once per outage, with its cause, and never as a lost lease', async () => {
    const store = new FlakyStore();
    app = await createEngineApp({ workflows: [ThreeSteps], store });
    for (let i = 0; i < 3; i++) await app.client.start(ThreeSteps, i, { id: `down-${i}` });
    store.down = true;
    expect(await app.worker.drain()).toBe(3);
    const errors = app.logged('error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('while executing "down-0": connect ECONNREFUSED 127.0.0.1:5432');
    expect(app.logs.find((entry) => entry.level === 'error')).toEqual({ level: 'error', message: errors[0] }); // a message, no stack
    expect(app.logged('warn').filter((message) => /lease/i.test(message))).toEqual([]);

    // Back up: once the leases lapse, the instances run again, and the recovery is said once.
    store.down = false;
    app.clock.advance(31_000);
    await app.worker.drain();
    expect(app.logged('warn').filter((message) => message.includes('answers again'))).toHaveLength(1);
    for (let i = 0; i < 3; i++) expect((await app.client.getStatus(`down-${i}`)).status).toBe('completed');
    expect(app.logged('error')).toEqual([errors[0]]);
  });

  it('logs a lost lease with the worker that holds the instance now', async () => {
    const store = new InMemoryWorkflowStore();
    @Workflow('faults.stolen')
    class Stolen {
      async run(ctx: WorkflowContext) {
        await ctx.step('steal', async () => {
          // Another worker claims the instance while this step runs, after this lease lapsed.
          app!.clock.advance(31_000);
          const now = app!.clock.now();
          await store.claim({
            owner: 'thief',
            token: 'thief-token',
            now,
            leaseUntil: now + 30_000,
            limit: 1,
            workflows: [{ name: 'faults.stolen', version: 1 }],
          });
          return 1;
        });
        return 'done';
      }
    }
    app = await createEngineApp({ workflows: [Stolen], store });
    await app.client.start(Stolen, null, { id: 'stolen' });
    await app.worker.drain();
    const lost = app.logged('warn').filter((message) => message.includes('Lost the lease'));
    expect(lost).toEqual([expect.stringContaining('"stolen" (faults.stolen@1): worker "thief" holds it now')]);
    expect(app.logged('error')).toEqual([]);
  });
});

describe('failed instances are logged', () => {
  @Workflow('faults.fails')
  class Fails {
    async run(ctx: WorkflowContext) {
      await ctx.step(
        'boom',
        () => {
          throw new Error('card declined');
        },
        { retry: false },
      );
    }
  }

  @Workflow('faults.compensation-fails', { version: 2 })
  class CompensationFails {
    async run(ctx: WorkflowContext) {
      await ctx.step('reserve', () => 1, {
        compensate: () => {
          throw new Error('release refused');
        },
        retry: false,
      });
      await ctx.step(
        'charge',
        () => {
          throw new Error('card declined');
        },
        { retry: false },
      );
    }
  }

  it('at warn, with id, workflow, version and error, for failed and compensation_failed', async () => {
    app = await createEngineApp({ workflows: [Fails, CompensationFails] });
    await app.client.start(Fails, null, { id: 'f1' });
    await app.client.start(CompensationFails, null, { id: 'f2' });
    await app.worker.drain();
    expect((await app.client.getStatus('f2')).status).toBe('compensation_failed');
    const failures = app.logged('warn').filter((message) => message.includes(' ended '));
    expect(failures).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Instance "f1" of faults\.fails@1 ended failed: Error: card declined$/),
        expect.stringMatching(
          /^Instance "f2" of faults\.compensation-fails@2 ended compensation_failed: Error: card declined; its compensation failed too: .*release refused/,
        ),
      ]),
    );
    expect(failures).toHaveLength(2);
  });

  it('not with logFailures: false', async () => {
    app = await createEngineApp({ workflows: [Fails], logFailures: false });
    await app.client.start(Fails, null, { id: 'quiet' });
    await app.worker.drain();
    expect((await app.client.getStatus('quiet')).status).toBe('failed');
    expect(app.logged('warn').filter((message) => message.includes(' ended '))).toEqual([]);
  });
});

describe('startup retries', () => {
  class SlowToStart extends InMemoryWorkflowStore {
    constructor(private failures: number) {
      super();
    }
    attempts = 0;
    async init(): Promise<void> {
      this.attempts++;
      if (this.attempts <= this.failures) throw refused();
    }
  }

  it('tries the store again retryAttempts times, retryDelay apart, logging each failed attempt', async () => {
    const store = new SlowToStart(2);
    const started = Date.now();
    app = await createEngineApp({ store, worker: false, retryAttempts: 3, retryDelay: '20ms' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect(store.attempts).toBe(3);
    const retries = app.logged('warn').filter((message) => message.startsWith('Unable to start the workflow store'));
    expect(retries).toEqual([expect.stringContaining('(attempt 1 of 4)'), expect.stringContaining('(attempt 2 of 4)')]);
    expect(retries[0]).toContain('Retrying in 20 ms');
  });

  it('fails startup with the store error after the last attempt', async () => {
    const store = new SlowToStart(10);
    await expect(createEngineApp({ store, worker: false, retryAttempts: 1, retryDelay: 1 })).rejects.toThrow(
      AggregateError,
    );
    expect(store.attempts).toBe(2);
  });
});

describe('the outage account and the backoff', () => {
  it('describes driver errors by code and message, without a stack', () => {
    expect(describeStoreError(refused())).toBe('connect ECONNREFUSED 127.0.0.1:5432');
    expect(
      describeStoreError(
        Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      ),
    ).toBe('57P01: terminating connection due to administrator command');
    expect(describeStoreError(new Error('wrapped', { cause: refused() }))).toBe('ECONNREFUSED: wrapped');
  });

  it('logs once per outage and once when it ends', () => {
    const messages: string[] = [];
    let now = 0;
    const outage = new StoreOutage(
      { warn: (m) => messages.push(`warn ${m}`), error: (m) => messages.push(`error ${m}`) },
      () => now,
    );
    outage.failed(refused(), 'claiming instances');
    outage.failed(refused(), 'renewing a lease');
    now = 4_500;
    outage.recovered();
    outage.recovered();
    outage.failed(new Error('again'), 'claiming instances');
    expect(messages).toEqual([
      expect.stringMatching(/^error The workflow store failed while claiming instances: connect ECONNREFUSED/),
      'warn The workflow store answers again, after 4.5 s and 2 failed call(s).',
      expect.stringMatching(/^error The workflow store failed while claiming instances: again/),
    ]);
  });

  it('waits longer between claims while they fail (doubling up to a cap), and polls normally after one succeeds', async () => {
    vi.useFakeTimers();
    const at: number[] = [];
    let failing = true;
    const loop = new LeasedWorker<string>({
      concurrency: 1,
      pollInterval: 1_000,
      leaseDuration: 30_000,
      heartbeatInterval: 10_000,
      shutdownTimeout: 100,
      clock: systemClock,
      claim: async () => {
        at.push(Date.now());
        if (failing) throw refused();
        return [];
      },
      renew: async () => true,
      execute: async () => undefined,
      onError: () => undefined,
    });
    const start = Date.now();
    loop.start();
    await vi.advanceTimersByTimeAsync(60_000);
    const gaps = at.map((t, i) => (i === 0 ? t - start : t - at[i - 1]!));
    expect(gaps.slice(0, 6)).toEqual([0, 1_000, 2_000, 4_000, 8_000, MAX_BACKOFF]);
    expect(Math.max(...gaps)).toBe(MAX_BACKOFF);
    failing = false;
    await vi.advanceTimersByTimeAsync(MAX_BACKOFF);
    const recoveredAt = at.length;
    await vi.advanceTimersByTimeAsync(3_000);
    expect(at.length - recoveredAt).toBe(3);
    await loop.shutdown();
  });
});

describe('store errors while concluding', () => {
  it('are told apart from bugs: a dropped connection, a refused one, a server shutting down, not a TypeError', async () => {
    const { looksLikeStoreError } = await import('../../src/engine/execution-reports.js');
    expect(looksLikeStoreError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(looksLikeStoreError(refused())).toBe(true);
    expect(
      looksLikeStoreError(
        Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      ),
    ).toBe(true);
    expect(
      looksLikeStoreError(
        Object.assign(new Error('Connection lost: The server closed the connection.'), {
          code: 'PROTOCOL_CONNECTION_LOST',
        }),
      ),
    ).toBe(true);
    expect(looksLikeStoreError(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(looksLikeStoreError(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
  });
});
