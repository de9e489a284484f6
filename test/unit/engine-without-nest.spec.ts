import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/errors/non-retryable.error.js';
import { InMemoryWorkflowStore } from '../../src/memory/in-memory-workflow.store.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { createEngineParts, type WorkflowBody } from './support/engine-app.js';

// The engine, the leased loop and the storage layer over a registry of plain functions: no
// decorators, no discovery. The core rules hold without the framework around them.

const T0 = Date.UTC(2026, 0, 1);
const LEASE = 30_000;

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('the engine without Nest', () => {
  it('replays completed steps from the journal: a step that ran is never run again', async () => {
    const clock = new ManualWorkflowClock(T0);
    const calls: string[] = [];
    const { runtime, storage, start } = createEngineParts({
      store: new InMemoryWorkflowStore(),
      clock,
      workflows: {
        twoSteps: async (ctx) => {
          const a = await ctx.step('a', () => {
            calls.push('a');
            return 'A';
          });
          await ctx.sleep('pause', '1m');
          const b = await ctx.step('b', () => {
            calls.push('b');
            return `${a}B`;
          });
          return b;
        },
      },
    });
    await start('r-1', 'twoSteps');

    expect(await runtime.drain()).toBe(1);
    expect(calls).toEqual(['a']);
    expect((await storage.get('r-1'))!.status).toBe('suspended');

    clock.advance('1m');
    expect(await runtime.drain()).toBe(1);
    const done = await storage.get('r-1', { journal: true });
    expect(done!.status).toBe('completed');
    expect(done!.output).toBe('AB');
    expect(calls).toEqual(['a', 'b']);
    expect(done!.journal!.map((e) => [e.name, e.state])).toEqual([
      ['a', 'completed'],
      ['pause', 'completed'],
      ['b', 'completed'],
    ]);
  });

  it('suspends on a signal wait with the wait registered and nothing due, and resumes when the signal comes', async () => {
    const clock = new ManualWorkflowClock(T0);
    const { runtime, storage, start, events } = createEngineParts({
      store: new InMemoryWorkflowStore(),
      clock,
      workflows: {
        approval: async (ctx) => ctx.waitForSignal<{ ok: boolean }>('approved', 'order.approved', { key: 'o-1' }),
      },
    });
    await start('s-1', 'approval');

    await runtime.drain();
    const parked = await storage.get('s-1');
    expect(parked!.status).toBe('suspended');
    expect(parked!.waits).toEqual([{ name: 'order.approved', key: 'o-1' }]);
    expect(parked!.wakeAt).toBeNull();
    expect(parked!.leaseToken).toBeNull();
    // Nothing is due: no execution runs until the signal.
    expect(await runtime.drain()).toBe(0);

    // Another key wakes nothing.
    expect(
      (
        await storage.signal({
          name: 'order.approved',
          key: 'o-2',
          dedupeId: null,
          payload: { ok: false },
          now: clock.now(),
        })
      ).woken,
    ).toBe(0);
    const sent = await storage.signal({
      name: 'order.approved',
      key: 'o-1',
      dedupeId: null,
      payload: { ok: true },
      now: clock.now(),
    });
    expect(sent.woken).toBe(1);
    expect(await runtime.drain()).toBe(1);
    const done = await storage.get('s-1');
    expect(done!.status).toBe('completed');
    expect(done!.output).toEqual({ ok: true });
    expect(events.map((e) => e.type)).toEqual([
      'workflow-started',
      'workflow-suspended',
      'workflow-resumed',
      'workflow-completed',
    ]);
  });

  it('fences a worker whose lease lapsed: the worker that took over wins, and nothing of the old one is recorded', async () => {
    const clock = new ManualWorkflowClock(T0);
    const store = new InMemoryWorkflowStore();
    const gate = { started: deferred(), release: deferred() };
    let runs = 0;
    const workflows: Record<string, WorkflowBody> = {
      fenced: async (ctx) => {
        const by = await ctx.step('work', async () => {
          runs++;
          if (runs === 1) {
            gate.started.resolve();
            await gate.release.promise;
            return 'first';
          }
          return 'second';
        });
        await ctx.step('after', () => by);
        return by;
      },
    };
    const first = createEngineParts({ store, clock, workflows, workerId: 'worker-1' });
    const second = createEngineParts({ store, clock, workflows, workerId: 'worker-2' });
    await first.start('f-1', 'fenced');

    // The first worker claims and its step hangs; no heartbeat renews the lease (the clock jumps past it).
    const stale = first.runtime.drain();
    await gate.started.promise;
    clock.advance(LEASE + 1);

    // The second worker claims the lapsed lease and runs the instance to its end.
    expect(await second.runtime.drain()).toBe(1);
    const taken = await store.get('f-1', { journal: true });
    expect(taken!.status).toBe('completed');
    expect(taken!.output).toBe('second');
    expect(taken!.leaseOwner).toBe('worker-2');

    // The first worker's step returns now: its write is refused, so the completed instance is untouched.
    gate.release.resolve();
    await stale;
    const after = await store.get('f-1', { journal: true });
    expect(after!.status).toBe('completed');
    expect(after!.output).toBe('second');
    expect(after!.journal!.find((e) => e.name === 'work')!.value).toBe('second');
    expect(after!.journal!.map((e) => e.name)).toEqual(['work', 'after']);
    expect(first.logs.some((line) => line.includes('Lost the lease on "f-1"'))).toBe(true);
    // It learnt of the loss at its write: it reports no end of the instance.
    expect(first.events.map((e) => e.type)).not.toContain('workflow-completed');
  });

  it('compensates completed steps in reverse order when a later step fails, then fails the instance', async () => {
    const clock = new ManualWorkflowClock(T0);
    const undone: string[] = [];
    const { runtime, storage, start, events } = createEngineParts({
      store: new InMemoryWorkflowStore(),
      clock,
      workflows: {
        saga: async (ctx) => {
          for (const name of ['reserve', 'charge', 'ship']) {
            await ctx.step(name, () => `${name}-id`, { compensate: (id) => void undone.push(`undo ${id}`) });
          }
          await ctx.step('notify', () => {
            throw new NonRetryableError('mail server refused');
          });
        },
      },
    });
    await start('c-1', 'saga');

    await runtime.drain();
    const failed = await storage.get('c-1', { journal: true });
    expect(undone).toEqual(['undo ship-id', 'undo charge-id', 'undo reserve-id']);
    expect(failed!.status).toBe('failed');
    expect(failed!.error).toMatchObject({ name: 'NonRetryableError', message: 'mail server refused' });
    const compensations = failed!.journal!.filter((e) => e.kind === 'compensation');
    expect(compensations.map((e) => [e.name, e.state])).toEqual([
      ['$compensate:ship', 'completed'],
      ['$compensate:charge', 'completed'],
      ['$compensate:reserve', 'completed'],
    ]);
    expect(
      failed!.journal!.filter((e) => e.kind === 'step' && e.state === 'completed').every((e) => e.compensated),
    ).toBe(true);
    expect(events.map((e) => e.type)).toContain('workflow-compensating');
    expect(events.at(-1)!.type).toBe('workflow-failed');
  });

  it('compensates in reverse order across executions: a compensation that must retry suspends, and the rest follow it', async () => {
    const clock = new ManualWorkflowClock(T0);
    const undone: string[] = [];
    let flaky = 0;
    const { runtime, storage, start } = createEngineParts({
      store: new InMemoryWorkflowStore(),
      clock,
      workflows: {
        saga: async (ctx) => {
          await ctx.step('first', () => 1, { compensate: () => void undone.push('first') });
          await ctx.step('second', () => 2, {
            compensate: () => {
              if (++flaky === 1) throw new Error('refund service down');
              undone.push('second');
            },
            compensateRetry: { attempts: 2, backoff: '10s' },
          });
          await ctx.step('third', () => {
            throw new NonRetryableError('out of stock');
          });
        },
      },
    });
    await start('c-2', 'saga');

    await runtime.drain();
    expect((await storage.get('c-2'))!.status).toBe('compensating');
    expect(undone).toEqual([]);

    clock.advance('10s');
    await runtime.drain();
    expect(undone).toEqual(['second', 'first']);
    expect((await storage.get('c-2'))!.status).toBe('failed');
  });
});
