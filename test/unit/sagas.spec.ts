import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  NonRetryableError,
  Workflow,
  WorkflowInvalidStateError,
  WorkflowSignal,
  type WorkflowContext,
  type WorkflowWrite,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

class Ledger {
  log: string[] = [];
  failing = new Map<string, number>();
  do(what: string): string {
    this.log.push(what);
    const left = this.failing.get(what) ?? 0;
    if (left > 0) {
      this.failing.set(what, left - 1);
      throw new Error(`${what} failed`);
    }
    return what;
  }
}

const proceed = new WorkflowSignal<null>('saga.proceed');

@Workflow('saga.trip', { retry: { attempts: 2, backoff: '1s' } })
class Trip {
  constructor(private readonly ledger: Ledger) {}
  async run(ctx: WorkflowContext, input: { wait?: boolean; sleep?: boolean }) {
    await ctx.step('flight', () => this.ledger.do('book flight'), {
      compensate: () => this.ledger.do('cancel flight'),
    });
    await ctx.step('hotel', () => this.ledger.do('book hotel'), { compensate: () => this.ledger.do('cancel hotel') });
    await ctx.step('note', () => this.ledger.do('note'));
    if (input.sleep) await ctx.sleep('pause', '1h');
    if (input.wait) await ctx.waitForSignal('go', proceed);
    await ctx.step('car', () => this.ledger.do('book car'), { compensate: () => this.ledger.do('cancel car') });
    return 'booked';
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

async function setup() {
  const ledger = new Ledger();
  app = await createEngineApp({ workflows: [new Trip(ledger)] });
  return ledger;
}

async function runFor(times: number, step = '1h') {
  for (let i = 0; i < times; i++) {
    await app.worker.drain();
    app.clock.advance(step);
  }
}

describe('compensations', () => {
  it('run in reverse order when a later step fails, then the instance fails', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 99);
    const handle = await app.client.start(Trip, {});
    await runFor(3);
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ message: 'book car failed' });
    expect(ledger.log).toEqual([
      'book flight',
      'book hotel',
      'note',
      'book car',
      'book car',
      'cancel hotel',
      'cancel flight',
    ]);
    expect(status.journal!.filter((e) => e.kind === 'compensation').map((e) => [e.name, e.state])).toEqual([
      ['$compensate:hotel', 'completed'],
      ['$compensate:flight', 'completed'],
    ]);
    const types = app.events.map((e) => e.type);
    expect(types.indexOf('workflow-compensating')).toBeLessThan(types.indexOf('workflow-failed'));
  });

  it('never runs a succeeded compensation again after a crash mid-compensation, and retries a failing one durably', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 99);
    ledger.failing.set('cancel flight', 1);
    const handle = await app.client.start(Trip, {});
    await app.worker.drain(); // car attempt 1 fails
    app.clock.advance('1s');
    await app.worker.drain(); // car attempt 2 fails: compensating; hotel undone; flight's first undo fails
    const mid = await handle.status({ journal: true });
    expect(mid.status).toBe('compensating');
    expect(mid.journal!.find((e) => e.name === '$compensate:flight')).toMatchObject({ state: 'waiting', attempts: 1 });
    app.clock.advance('1s');
    await app.worker.drain();
    expect((await handle.status()).status).toBe('failed');
    expect(ledger.log.filter((l) => l.startsWith('cancel'))).toEqual([
      'cancel hotel',
      'cancel flight',
      'cancel flight',
    ]);
  });

  it('ends compensation_failed with both errors when a compensation keeps failing, and retry() runs the compensations again', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 99);
    ledger.failing.set('cancel hotel', 2);
    const handle = await app.client.start(Trip, {});
    await runFor(5, '1s');
    const failed = await handle.status();
    expect(failed.status).toBe('compensation_failed');
    expect(failed.error).toMatchObject({
      message: 'book car failed',
      compensation: { message: 'cancel hotel failed', step: 'hotel' },
    });
    await app.client.retry(handle.id);
    await runFor(2, '1s');
    const retried = await handle.status();
    expect(retried.status).toBe('failed');
    expect(retried.error).toMatchObject({ message: 'book car failed' });
    expect(retried.error!.compensation).toBeUndefined();
    expect(ledger.log.filter((l) => l.startsWith('cancel'))).toEqual([
      'cancel hotel',
      'cancel hotel',
      'cancel hotel',
      'cancel flight',
    ]);
  });
  it('waits for a step still running beside one that failed (Promise.all), and compensates it too', async () => {
    const undone: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    @Workflow('saga.parallel-failure', { retry: false })
    class ParallelFailure {
      async run(ctx: WorkflowContext) {
        await Promise.all([
          ctx.step('charge', async () => (await held, 'c1'), { compensate: (id) => undone.push(`refund ${id}`) }),
          ctx.step('reserve', () => {
            // The charge settles only after this step failed and run() rejected.
            setImmediate(release);
            throw new NonRetryableError('out of stock');
          }),
        ]);
      }
    }
    app = await createEngineApp({ workflows: [ParallelFailure] });
    const handle = await app.client.start(ParallelFailure, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'NonRetryableError', message: 'out of stock' });
    expect(status.journal!.find((e) => e.name === 'charge')).toMatchObject({
      state: 'completed',
      value: 'c1',
      compensated: true,
    });
    expect(undone).toEqual(['refund c1']);
  });
});

describe('cancel and terminate', () => {
  it('cancels during a sleep: compensations run, it ends cancelled with the reason', async () => {
    const ledger = await setup();
    const handle = await app.client.start(Trip, { sleep: true });
    await app.worker.drain();
    await app.client.cancel(handle.id, 'customer changed their mind');
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: 'customer changed their mind' });
    expect(ledger.log).toEqual(['book flight', 'book hotel', 'note', 'cancel hotel', 'cancel flight']);
    await expect(handle.result()).rejects.toMatchObject({ name: 'WorkflowCancelledError' });
  });

  it('refuses a repeated cancel and a cancel of a finished instance', async () => {
    await setup();
    const handle = await app.client.start(Trip, { wait: true });
    await app.worker.drain();
    await app.client.cancel(handle.id);
    await expect(app.client.cancel(handle.id)).rejects.toBeInstanceOf(WorkflowInvalidStateError);
    await app.worker.drain();
    await expect(app.client.cancel(handle.id)).rejects.toThrow(/is cancelled and can't be cancelled/);
  });

  it('cancels during a step: the step sees ctx.signal, its result is compensated too', async () => {
    let release!: () => void;
    const entered = new Promise<void>((resolve) => {
      release = resolve;
    });
    const undone: string[] = [];
    @Workflow('saga.long-step')
    class LongStep {
      async run(ctx: WorkflowContext) {
        await ctx.step('a', () => 'a', { compensate: () => undone.push('a') });
        await ctx.step(
          'long',
          ({ signal }) => {
            release();
            return new Promise((resolve) => signal.addEventListener('abort', () => resolve('stopped early')));
          },
          { compensate: (r) => undone.push(`long:${r}`) },
        );
        await ctx.step('never', () => undone.push('never ran'));
      }
    }
    app = await createEngineApp({ workflows: [LongStep] });
    const handle = await app.client.start(LongStep, null);
    const drained = app.worker.drain();
    await entered;
    await app.client.cancel(handle.id, 'stop');
    await drained;
    await app.worker.drain();
    expect((await handle.status()).status).toBe('cancelled');
    expect(undone).toEqual(['long:stopped early', 'a']);
  });

  it('terminates during compensation: the remaining compensations never run', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 99);
    ledger.failing.set('cancel hotel', 99);
    const handle = await app.client.start(Trip, {});
    await runFor(2, '1s');
    expect((await handle.status()).status).toBe('compensating');
    await expect(app.client.cancel(handle.id)).rejects.toThrow(/already compensating/);
    await app.client.terminate(handle.id, 'enough');
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'enough' });
    expect(ledger.log).not.toContain('cancel flight');
  });

  it('times out during a wait: compensates and fails with WorkflowTimeoutError', async () => {
    const ledger = await setup();
    const handle = await app.client.start(Trip, { wait: true }, { timeout: '2h' });
    await app.worker.drain();
    expect((await handle.status()).wakeAt).toBe(app.clock.now() + 7_200_000);
    app.clock.advance('2h');
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error!.name).toBe('WorkflowTimeoutError');
    expect(ledger.log.slice(-2)).toEqual(['cancel hotel', 'cancel flight']);
  });
});

describe('retry()', () => {
  it('runs a failed instance again: completed steps keep their results, the failed step runs again', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 2);
    @Workflow('saga.plain', { retry: false })
    class Plain {
      constructor(private readonly l: Ledger) {}
      async run(ctx: WorkflowContext) {
        await ctx.step('one', () => this.l.do('one'));
        return ctx.step('car', () => this.l.do('book car'));
      }
    }
    await app.close();
    const plainLedger = new Ledger();
    app = await createEngineApp({ workflows: [new Plain(plainLedger)] });
    plainLedger.failing.set('book car', 1);
    const handle = await app.client.start(Plain, null);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('failed');
    await app.client.retry(handle.id);
    await app.worker.drain();
    expect(await handle.result()).toBe('book car');
    expect(plainLedger.log).toEqual(['one', 'book car', 'book car']);
    void ledger;
  });

  it('runs the compensated steps of a failed saga again', async () => {
    const ledger = await setup();
    ledger.failing.set('book car', 2);
    const handle = await app.client.start(Trip, {});
    await runFor(3, '1s');
    expect((await handle.status()).status).toBe('failed');
    await app.client.retry(handle.id);
    await runFor(2, '1s');
    expect(await handle.result()).toBe('booked');
    expect(ledger.log).toEqual([
      'book flight',
      'book hotel',
      'note',
      'book car',
      'book car',
      'cancel hotel',
      'cancel flight',
      'book flight',
      'book hotel',
      'book car',
    ]);
  });

  it('runs a cancelled instance again, and refuses a running or completed one; of two concurrent retries one wins', async () => {
    const ledger = await setup();
    const handle = await app.client.start(Trip, { sleep: true });
    await app.worker.drain();
    await expect(app.client.retry(handle.id)).rejects.toThrow(
      /is suspended: only failed, cancelled or compensation_failed/,
    );
    await app.client.cancel(handle.id);
    await app.worker.drain();
    const results = await Promise.allSettled([app.client.retry(handle.id), app.client.retry(handle.id)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    await runFor(2);
    expect(await handle.result()).toBe('booked');
    await expect(app.client.retry(handle.id)).rejects.toBeInstanceOf(WorkflowInvalidStateError);
    expect(ledger.log.filter((l) => l === 'book flight')).toHaveLength(2);
  });
});

describe('retry() and the run timeout', () => {
  @Workflow('saga.timed', { timeout: '1h', retry: false })
  class Timed {
    constructor(private readonly l: Ledger) {}
    async run(ctx: WorkflowContext) {
      return ctx.step('work', () => this.l.do('work'));
    }
  }

  for (const [what, start] of [
    ['started at once', {}],
    ['started with startAt two hours ahead', { startAt: new Date('2026-01-01T02:00:00Z') }],
    ['started with a timeout option and startAt', { startAt: new Date('2026-01-01T02:00:00Z'), timeout: '30m' }],
  ] as const) {
    it(`gives a retried instance the run timeout it was started with (${what})`, async () => {
      const ledger = new Ledger();
      app = await createEngineApp({ workflows: [new Timed(ledger)] });
      const timeout = 'timeout' in start ? 1_800_000 : 3_600_000;
      ledger.failing.set('work', 1);
      const handle = await app.client.start(Timed, null, start);
      const startsAt = 'startAt' in start ? start.startAt.getTime() : app.clock.now();
      expect((await handle.status()).deadline).toBe(startsAt + timeout);
      app.clock.set(startsAt);
      await app.worker.drain();
      expect((await handle.status()).status).toBe('failed');
      app.clock.advance('10m');
      await app.client.retry(handle.id);
      expect((await handle.status()).deadline).toBe(app.clock.now() + timeout);
      await app.worker.drain();
      expect(await handle.result()).toBe('work');
    });
  }

  it('counts the run timeout of an instance stored without one (created before stores kept it) from its creation', async () => {
    const ledger = new Ledger();
    app = await createEngineApp({ workflows: [new Timed(ledger)] });
    ledger.failing.set('work', 1);
    await app.store.create({
      id: 'legacy',
      workflow: 'saga.timed',
      version: 1,
      input: null,
      deadline: app.clock.now() + 3_600_000,
      now: app.clock.now(),
    });
    expect((await app.client.getStatus('legacy')).timeout).toBeNull();
    await app.worker.drain();
    expect((await app.client.getStatus('legacy')).status).toBe('failed');
    app.clock.advance('10m');
    await app.client.retry('legacy');
    expect((await app.client.getStatus('legacy')).deadline).toBe(app.clock.now() + 3_600_000);
  });
});

describe('delete and purge', () => {
  it('deletes finished instances only', async () => {
    await setup();
    const waiting = await app.client.start(Trip, { wait: true });
    await app.worker.drain();
    await expect(app.client.delete(waiting.id)).rejects.toThrow(/only finished instances can be deleted/);
    await app.client.terminate(waiting.id);
    await app.worker.drain();
    await app.client.delete(waiting.id);
    await expect(app.client.getStatus(waiting.id)).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
  });

  it('refuses a purge() status it does not know, instead of purging nothing', async () => {
    await setup();
    const handle = await app.client.start(Trip, {});
    await runFor(2);
    expect((await handle.status()).status).toBe('completed');
    app.clock.advance('2d');
    await expect(app.client.purge({ olderThan: '1d', statuses: ['complete' as never] })).rejects.toThrow(
      /Invalid purge\(\) option "statuses": "complete"\. Use completed, failed, cancelled, compensation_failed/,
    );
    await expect(app.client.purge({ olderThan: '1d', statuses: 'completed' as never })).rejects.toThrow(
      /Use an array of statuses/,
    );
    expect((await handle.status()).status).toBe('completed');
  });

  it('purges finished instances older than the cutoff, never unfinished ones, and honours limit', async () => {
    await setup();
    const done = await Promise.all([1, 2, 3].map(() => app.client.start(Trip, {})));
    const waiting = await app.client.start(Trip, { wait: true });
    await app.worker.drain();
    await app.client.signal(proceed, null);
    app.clock.advance('2d');
    const purgedOne = await app.client.purge({
      olderThan: '1d',
      limit: 1,
      statuses: ['completed', 'failed', 'running' as never],
    });
    expect(purgedOne.instances).toBe(1);
    const rest = await app.client.purge({ olderThan: '1d' });
    expect(rest.instances).toBe(2);
    expect((await app.client.list()).map((i) => i.id)).toEqual([waiting.id]);
    void done;
  });
});

describe('a crash mid-compensation', () => {
  it('runs each compensation that was recorded as done exactly once, and finishes the rest on another worker', async () => {
    const undone: string[] = [];
    let hang = true;
    @Workflow('saga.crashing')
    class Crashing {
      async run(ctx: WorkflowContext) {
        await ctx.step('flight', () => 'F', { compensate: () => void undone.push('cancel flight') });
        await ctx.step('hotel', () => 'H', {
          compensate: async () => {
            undone.push('cancel hotel');
            // The first worker "crashes" inside this compensation: it never returns.
            if (hang) {
              hang = false;
              await new Promise(() => undefined);
            }
          },
        });
        await ctx.step('car', () => 'C', { compensate: () => void undone.push('cancel car') });
        await ctx.step('boom', () => {
          throw new NonRetryableError('no seats');
        });
      }
    }
    const store = new InMemoryWorkflowStore();
    app = await createEngineApp({ workflows: [Crashing], store, worker: { enabled: false, shutdownTimeout: '50ms' } });
    const handle = await app.client.start(Crashing, null, { id: 'crashing' });
    void app.worker.drain(); // stays stuck in the hotel's compensation
    while (!undone.includes('cancel hotel')) await new Promise((resolve) => setImmediate(resolve));
    const mid = await app.client.getStatus('crashing', { journal: true });
    expect(mid.status).toBe('compensating');
    expect(mid.journal!.filter((e) => e.kind === 'compensation').map((e) => [e.name, e.state])).toEqual([
      ['$compensate:car', 'completed'],
    ]);
    // Another process takes over once the lease lapses.
    const other = await createEngineApp({ workflows: [Crashing], store });
    other.clock.set(app.clock.now() + 31_000);
    await other.worker.drain();
    await other.close();
    expect((await handle.status()).status).toBe('failed');
    // The car's undo was recorded before the crash: never again. The hotel's was cut short: it ran again.
    expect(undone).toEqual(['cancel car', 'cancel hotel', 'cancel hotel', 'cancel flight']);
  });
});

describe('terminate during a running compensation', () => {
  it('ends the instance at once, without waiting for the compensation or running the others', async () => {
    const undone: string[] = [];
    let entered!: () => void;
    const inCompensation = new Promise<void>((resolve) => (entered = resolve));
    @Workflow('saga.stuck-undo')
    class StuckUndo {
      async run(ctx: WorkflowContext) {
        await ctx.step('first', () => 1, { compensate: () => void undone.push('undo first') });
        await ctx.step('second', () => 2, {
          compensate: () => {
            entered();
            return new Promise(() => undefined); // never returns
          },
        });
        await ctx.step('boom', () => {
          throw new NonRetryableError('boom');
        });
      }
    }
    app = await createEngineApp({ workflows: [StuckUndo], worker: { enabled: false, shutdownTimeout: '50ms' } });
    const handle = await app.client.start(StuckUndo, null);
    const drained = app.worker.drain();
    await inCompensation;
    await app.client.terminate(handle.id, 'give up');
    await drained;
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'give up' });
    expect(undone).toEqual([]);
  });
});

describe('terminate between two compensations', () => {
  it('runs no further compensation once a terminate was noticed while the previous one was being recorded', async () => {
    const undone: string[] = [];
    /** Terminates the instance while the write that records the hotel's undo is under way. */
    class TerminateDuringWrite extends InMemoryWorkflowStore {
      override async write(id: string, token: string, write: WorkflowWrite) {
        if (write.entries.some((e) => e.name === '$compensate:hotel' && e.state === 'completed'))
          await app.client.terminate(id, 'stop undoing');
        return super.write(id, token, write);
      }
    }
    @Workflow('saga.terminate-between')
    class TerminateBetween {
      async run(ctx: WorkflowContext) {
        await ctx.step('flight', () => 'F', { compensate: () => void undone.push('cancel flight') });
        await ctx.step('hotel', () => 'H', { compensate: () => void undone.push('cancel hotel') });
        await ctx.step('boom', () => {
          throw new NonRetryableError('no seats');
        });
      }
    }
    app = await createEngineApp({ workflows: [TerminateBetween], store: new TerminateDuringWrite() });
    const handle = await app.client.start(TerminateBetween, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'stop undoing' });
    expect(undone).toEqual(['cancel hotel']);
  });
});

describe('terminate from another process while a compensation fails', () => {
  it('ends the instance at once instead of after the compensation’s backoff', async () => {
    const undone: string[] = [];
    const store = new InMemoryWorkflowStore();
    const elsewhere: { app?: EngineApp } = {};
    @Workflow('saga.terminate-elsewhere')
    class TerminateElsewhere {
      async run(ctx: WorkflowContext) {
        await ctx.step('flight', () => 'F', {
          compensate: async () => {
            undone.push('cancel flight');
            // Another process terminates the instance while this attempt runs here; the attempt then fails.
            await elsewhere.app!.client.terminate(ctx.id, 'give up');
            throw new Error('airline unreachable');
          },
          compensateRetry: { attempts: 3, backoff: '1h' },
        });
        await ctx.step('boom', () => {
          throw new NonRetryableError('no seats');
        });
      }
    }
    app = await createEngineApp({ workflows: [TerminateElsewhere], store });
    const other = (elsewhere.app = await createEngineApp({ workflows: [TerminateElsewhere], store }));
    try {
      const handle = await app.client.start(TerminateElsewhere, null);
      await app.worker.drain();
      await app.worker.drain(); // nothing waits an hour: the terminate is due now
      const status = await handle.status();
      expect(status.status).toBe('cancelled');
      expect(status.error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'give up' });
      expect(undone).toEqual(['cancel flight']);
    } finally {
      await other.close();
    }
  });
});

describe('a cancel or the run deadline while parallel steps run', () => {
  for (const stop of ['cancel', 'deadline'] as const) {
    it(`waits for the step still running beside one that stopped at the ${stop} (Promise.all), and compensates both`, async () => {
      const undone: string[] = [];
      const gates = { fast: deferred(), slow: deferred(), started: 0, bothStarted: deferred() };
      @Workflow(`saga.parallel-${stop}`, { timeout: '1h' })
      class ParallelStop {
        async run(ctx: WorkflowContext) {
          const step = (name: 'fast' | 'slow') =>
            ctx.step(
              name,
              async () => {
                if (++gates.started === 2) gates.bothStarted.resolve();
                await gates[name].promise;
                return name;
              },
              { compensate: (value) => void undone.push(`undo ${String(value)}`) },
            );
          await Promise.all([step('fast'), step('slow')]);
          return 'done';
        }
      }
      app = await createEngineApp({ workflows: [ParallelStop] });
      const handle = await app.client.start(ParallelStop, null);
      const drained = app.worker.drain();
      await gates.bothStarted.promise;
      if (stop === 'cancel') await app.client.cancel(handle.id, 'changed my mind');
      else app.clock.advance('1h');
      // The fast step completes and stops at its checkpoint while the slow one still runs.
      gates.fast.resolve();
      await new Promise((resolve) => setTimeout(resolve, 20));
      gates.slow.resolve();
      await drained;
      const status = await handle.status({ journal: true });
      expect(status.status).toBe(stop === 'cancel' ? 'cancelled' : 'failed');
      expect(status.error).toMatchObject({
        name: stop === 'cancel' ? 'WorkflowCancelledError' : 'WorkflowTimeoutError',
      });
      expect(status.journal!.filter((e) => e.kind === 'step').map((e) => [e.name, e.state, e.compensated])).toEqual([
        ['fast', 'completed', true],
        ['slow', 'completed', true],
      ]);
      expect(undone).toEqual(['undo slow', 'undo fast']);
    });
  }
});

/** A promise resolved from outside. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
