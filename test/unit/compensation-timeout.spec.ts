import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  NonRetryableError,
  Workflow,
  WorkflowTimeoutError,
  type Duration,
  type WorkflowContext,
  type WorkflowRetry,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// A compensation's attempts are bounded as a step's are: `compensateTimeout` (default the step's
// `timeout`), and a second argument `{ attempt, signal }` whose signal aborts on that timeout and on
// what stops the compensations (terminate, shutdown, a lost lease), so a hung undo (an HTTP call
// that never answers) can't keep the instance `compensating` forever under a live lease.

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** Resolves with `promise`, or rejects naming `what` when it has not settled within `ms` (real time). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise resolved from outside. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const never = () => new Promise<never>(() => undefined);
const boom = () => {
  throw new NonRetryableError('no seats');
};

/** What each compensation attempt was given, and why its signal aborted. */
interface Seen {
  attempt: number;
  keys: string[];
  aborted: unknown;
}

/** A saga whose one compensation does what `undo` says with the `{ attempt, signal }` it is given. */
function sagaWith(
  name: string,
  options: { timeout?: Duration; compensateTimeout?: Duration; compensateRetry?: WorkflowRetry },
  undo: (seen: Seen, signal: AbortSignal) => Promise<unknown>,
) {
  const seen: Seen[] = [];
  @Workflow(name, { retry: false })
  class Saga {
    async run(ctx: WorkflowContext) {
      await ctx.step('flight', () => 'F', {
        ...options,
        compensate: (_id, run) => {
          const entry: Seen = { attempt: run.attempt, keys: Object.keys(run), aborted: undefined };
          seen.push(entry);
          run.signal.addEventListener('abort', () => (entry.aborted = run.signal.reason), { once: true });
          return undo(entry, run.signal);
        },
      });
      await ctx.step('boom', boom);
    }
  }
  return { Saga, seen };
}

const undoEntry = async (id: string) =>
  (await app!.client.getStatus(id, { journal: true })).journal!.find((e) => e.name === '$compensate:flight');

describe('compensateTimeout', () => {
  it('fails each attempt of a compensation that never settles as timed out, journals it, retries it, then ends compensation_failed', async () => {
    const { Saga, seen } = sagaWith(
      'compensation-timeout.hangs',
      { compensateTimeout: '20ms', compensateRetry: { attempts: 2, backoff: '1s' } },
      never,
    );
    app = await createEngineApp({ workflows: [Saga], worker: { enabled: false, shutdownTimeout: '50ms' } });
    const handle = await app.client.start(Saga, null);
    await within(app.worker.drain(), 2_000, 'the drain of attempt 1');
    expect((await handle.status()).status).toBe('compensating');
    const waiting = await undoEntry(handle.id);
    expect(waiting).toMatchObject({
      kind: 'compensation',
      state: 'waiting',
      attempts: 1,
      error: { name: 'WorkflowTimeoutError' },
    });
    expect(waiting!.error!.message).toMatch(
      /^Compensation of step "flight" of instance ".+" did not finish within 20 ms \(attempt 1\)\./,
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.attempt).toBe(1);
    expect(seen[0]!.keys).toEqual(['attempt', 'signal']);
    expect(seen[0]!.aborted).toBeInstanceOf(WorkflowTimeoutError);

    app.clock.advance('1s');
    await within(app.worker.drain(), 2_000, 'the drain of attempt 2');
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('compensation_failed');
    expect(status.error).toMatchObject({
      name: 'NonRetryableError',
      message: 'no seats',
      compensation: { name: 'WorkflowTimeoutError', step: 'flight' },
    });
    expect(await undoEntry(handle.id)).toMatchObject({
      state: 'failed',
      attempts: 2,
      error: { name: 'WorkflowTimeoutError' },
    });
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
    expect(seen[1]!.aborted).toBeInstanceOf(WorkflowTimeoutError);
    expect(app.events.map((e) => e.type)).toContain('workflow-compensation-failed');
  });

  it("defaults to the step's timeout, for a compensation that takes one argument", async () => {
    @Workflow('compensation-timeout.default', { retry: false })
    class DefaultTimeout {
      async run(ctx: WorkflowContext) {
        await ctx.step('flight', () => 'F', {
          timeout: '20ms',
          compensate: (id) => (id === 'F' ? never() : undefined),
        });
        await ctx.step('boom', boom);
      }
    }
    app = await createEngineApp({ workflows: [DefaultTimeout], worker: { enabled: false, shutdownTimeout: '50ms' } });
    const handle = await app.client.start(DefaultTimeout, null);
    await within(app.worker.drain(), 2_000, 'the drain of the compensation');
    const status = await handle.status();
    expect(status.status).toBe('compensation_failed');
    expect(status.error?.compensation).toMatchObject({
      name: 'WorkflowTimeoutError',
      step: 'flight',
      message: expect.stringContaining('did not finish within 20 ms'),
    });
  });

  it("overrides the step's timeout: a compensation slower than the step's timeout but within its own completes", async () => {
    const { Saga, seen } = sagaWith(
      'compensation-timeout.longer',
      { timeout: '10ms', compensateTimeout: '5s' },
      () => new Promise((resolve) => setTimeout(resolve, 60)),
    );
    app = await createEngineApp({ workflows: [Saga] });
    const handle = await app.client.start(Saga, null);
    await within(app.worker.drain(), 2_000, 'the drain of the compensation');
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ message: 'no seats' });
    expect(await undoEntry(handle.id)).toMatchObject({ state: 'completed', attempts: 1 });
    expect(seen).toMatchObject([{ attempt: 1, aborted: undefined }]);
  });
});

describe("a compensation's signal", () => {
  it('aborts on a terminate, and the instance ends cancelled at once', async () => {
    const entered = deferred();
    const { Saga, seen } = sagaWith('compensation-timeout.terminate', {}, (_seen, signal) => {
      entered.resolve();
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
      );
    });
    app = await createEngineApp({ workflows: [Saga], worker: { enabled: false, shutdownTimeout: '50ms' } });
    const handle = await app.client.start(Saga, null);
    const drained = app.worker.drain();
    await within(entered.promise, 2_000, 'the start of the compensation');
    await app.client.terminate(handle.id, 'give up');
    await within(drained, 2_000, 'the drain');
    expect((await handle.status()).error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'give up' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.aborted).toMatchObject({ reason: 'terminate' });
  });

  it('aborts on a shutdown; an attempt that then fails is not counted, and the next worker runs it again', async () => {
    const store = new InMemoryWorkflowStore();
    const entered = deferred();
    let lastRunSucceeds = false;
    const { Saga, seen } = sagaWith('compensation-timeout.shutdown', { compensateRetry: false }, (_seen, signal) => {
      entered.resolve();
      if (lastRunSucceeds) return Promise.resolve();
      // What fetch() and most clients do when their signal aborts: reject with an error of their own.
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new Error('The operation was aborted')), { once: true }),
      );
    });
    app = await createEngineApp({ workflows: [Saga], store });
    const handle = await app.client.start(Saga, null);
    const drained = app.worker.drain();
    await within(entered.promise, 2_000, 'the start of the compensation');
    await within(app.close(), 2_000, 'the shutdown');
    await drained;
    app = undefined;
    expect(seen).toHaveLength(1);
    expect(seen[0]!.aborted).toMatchObject({ reason: 'shutdown' });
    const stored = await store.get(handle.id);
    expect(stored).toMatchObject({ status: 'compensating', leaseToken: null });
    // The only attempt compensateRetry allows was cut short by the shutdown, not spent.
    expect(
      (await store.get(handle.id, { journal: true }))!.journal!.find((e) => e.name === '$compensate:flight'),
    ).toBeUndefined();

    lastRunSucceeds = true;
    app = await createEngineApp({ workflows: [Saga], store });
    await within(app.worker.drain(), 2_000, 'the drain after the restart');
    expect((await handle.status()).status).toBe('failed');
    expect(seen.map((s) => s.attempt)).toEqual([1, 1]);
  });
});

describe('compensateTimeout validation', () => {
  for (const [value, message] of [
    ['soon', 'Invalid compensateTimeout of step "flight": "soon". A duration is'],
    [
      0,
      'Invalid compensateTimeout of step "flight": 0. It must be longer than 0; leave the option out for the step\'s timeout.',
    ],
  ] as const) {
    it(`fails the instance on compensateTimeout ${JSON.stringify(value)} before the step runs`, async () => {
      const ran: string[] = [];
      @Workflow(`compensation-timeout.bad-${String(value)}`, { retry: false })
      class Bad {
        async run(ctx: WorkflowContext) {
          await ctx.step('flight', () => void ran.push('flight'), {
            compensate: () => void ran.push('undo'),
            compensateTimeout: value as Duration,
          });
        }
      }
      app = await createEngineApp({ workflows: [Bad] });
      const handle = await app.client.start(Bad, null);
      await app.worker.drain();
      const status = await handle.status({ journal: true });
      expect(status.status).toBe('failed');
      expect(status.error).toMatchObject({ name: 'TypeError' });
      expect(status.error!.message).toContain(message);
      expect(ran).toEqual([]);
      expect(status.journal).toEqual([]);
    });
  }
});
