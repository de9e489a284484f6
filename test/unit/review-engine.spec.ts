import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import type { NewWorkflowInstance } from '../../src/storage/workflow-store.js';
import { createTestApp, type TestApp } from './helpers.js';

const vote = new WorkflowSignal<{ by: string }>('review.vote');
const go = new WorkflowSignal<null>('review.go');

let app: TestApp;
afterEach(async () => app?.close());

describe('parallel waits on one signal', () => {
  @Workflow('review.two-votes')
  class TwoVotes {
    async run(ctx: WorkflowContext) {
      await ctx.waitForSignal('ready', go);
      const [a, b] = await Promise.all([ctx.waitForSignal('a', vote), ctx.waitForSignal('b', vote)]);
      return [a.by, b.by].sort();
    }
  }

  it('takes two signals that were both sent before the waits were reached, in one execution', async () => {
    app = await createTestApp([TwoVotes]);
    const handle = await app.client.start(TwoVotes, null);
    await app.worker.drain();
    await app.client.signal(vote, { by: 'ann' });
    await app.client.signal(vote, { by: 'bob' });
    await app.client.signal(go, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('completed');
    expect(status.output).toEqual(['ann', 'bob']);
  });
});

/** A promise resolved from outside. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets pending timers, immediates and microtasks run. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 20));

describe('terminate while a step runs', () => {
  const gate = { started: deferred(), release: deferred() };

  @Workflow('review.slow-step')
  class SlowStep {
    async run(ctx: WorkflowContext) {
      await ctx.step('slow', async () => {
        gate.started.resolve();
        await gate.release.promise;
        return 'done';
      });
      return 'ok';
    }
  }

  it('ends at once and reports nothing about the step it left running', async () => {
    app = await createTestApp([SlowStep]);
    const handle = await app.client.start(SlowStep, null);
    const drained = app.worker.drain();
    await gate.started.promise;
    await app.client.terminate(handle.id, 'stop now');
    await drained;
    expect((await handle.status()).status).toBe('cancelled');
    gate.release.resolve();
    await settle();
    const types = app.events.filter((e) => e.id === handle.id).map((e) => e.type);
    expect(types).toEqual(['workflow-started', 'workflow-cancelled']);
    const status = await handle.status({ journal: true });
    expect(status.journal).toEqual([]);
  });
});

describe('the run deadline while a step runs', () => {
  const seen = { started: deferred(), aborted: false };

  @Workflow('review.deadline', { timeout: '1h' })
  class PastDeadline {
    async run(ctx: WorkflowContext) {
      await ctx.step('long', ({ signal }) =>
        new Promise<string>((resolve, reject) => {
          seen.started.resolve();
          // Gives up on its own after a while, so a missed deadline fails the test instead of hanging it.
          const timer = setTimeout(() => resolve('finished'), 1000);
          signal.addEventListener('abort', () => {
            seen.aborted = true;
            clearTimeout(timer);
            reject(new Error('aborted'));
          });
        }),
      );
      await ctx.step('after', () => 'never');
      return 'ok';
    }
  }

  it('is seen at the next heartbeat: the step is aborted and the instance fails with WorkflowTimeoutError', async () => {
    app = await createTestApp([PastDeadline], { worker: { enabled: false, leaseDuration: '1m', heartbeatInterval: 20 } });
    const handle = await app.client.start(PastDeadline, null);
    const drained = app.worker.drain();
    await seen.started.promise;
    app.clock.advance('2h');
    const started = Date.now();
    await drained;
    expect(Date.now() - started).toBeLessThan(800);
    expect(seen.aborted).toBe(true);
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error?.name).toBe('WorkflowTimeoutError');
    // The step was stopped by the timeout, not failed by it: nothing is recorded for it.
    expect(status.journal).toEqual([]);
  });
});

describe('shutdown while a cancel compensates', () => {
  const undo = { log: [] as string[], started: deferred(), release: deferred() };
  const work = { started: deferred(), release: deferred() };

  @Workflow('review.cancel-shutdown')
  class Booking {
    async run(ctx: WorkflowContext) {
      await ctx.step('a', () => 'a', { compensate: () => void undo.log.push('undo a') });
      await ctx.step('b', () => 'b', {
        compensate: async () => {
          undo.started.resolve();
          await undo.release.promise;
          undo.log.push('undo b');
        },
      });
      await ctx.step('c', async () => {
        work.started.resolve();
        await work.release.promise;
        return 'c';
      });
      return 'ok';
    }
  }

  it('stops after the compensation that runs and hands the instance back', async () => {
    app = await createTestApp([Booking]);
    const handle = await app.client.start(Booking, null);
    const drained = app.worker.drain();
    await work.started.promise;
    // Noticed by the running execution: it lets step c finish, then compensates.
    await app.client.cancel(handle.id, 'changed my mind');
    work.release.resolve();
    await undo.started.promise;
    const closed = app.close();
    await settle();
    undo.release.resolve();
    await closed;
    await drained;
    expect(undo.log).toEqual(['undo b']);
    const stored = await app.store.get(handle.id);
    expect(stored?.status).toBe('compensating');
    expect(stored?.leaseToken).toBeNull();
    expect(stored?.wakeAt).not.toBeNull();
  });
});

describe('the journal limit', () => {
  const effects: string[] = [];

  @Workflow('review.journal-limit')
  class Loop {
    async run(ctx: WorkflowContext) {
      for (let i = 0; ; i++) {
        await ctx.step(`s${i}`, () => void effects.push(`do ${i}`), { compensate: () => void effects.push(`undo ${i}`) });
      }
    }
  }

  it('stops before the side effect of a step it could not record, so every effect that ran is undone', async () => {
    app = await createTestApp([Loop], { journal: { maxEntries: 2 } });
    const handle = await app.client.start(Loop, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error?.name).toBe('WorkflowJournalLimitError');
    expect(effects).toEqual(['do 0', 'do 1', 'undo 1', 'undo 0']);
  });
});

describe('the journal size warning', () => {
  @Workflow('review.journal-bytes')
  class OneStep {
    async run(ctx: WorkflowContext) {
      return ctx.step('only', () => 'x'.repeat(200));
    }
  }

  it('fires when the entry that crosses warnBytes is recorded, and counts that entry', async () => {
    app = await createTestApp([OneStep], { journal: { warnBytes: 100 } });
    const handle = await app.client.start(OneStep, null);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('completed');
    const warnings = app.events.filter((e) => e.type === 'journal-large');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ entries: 1 });
    expect((warnings[0] as unknown as { bytes: number }).bytes).toBeGreaterThan(200);
  });
});

describe('terminate while a child is being created', () => {
  /** A store whose creation of a child waits for a gate. */
  class SlowChildren extends InMemoryWorkflowStore {
    creating = deferred();
    release = deferred();
    override async create(instance: NewWorkflowInstance) {
      if (instance.parentId) {
        this.creating.resolve();
        await this.release.promise;
      }
      return super.create(instance);
    }
  }

  @Workflow('review.child')
  class Child {
    async run(ctx: WorkflowContext) {
      await ctx.waitForSignal('never', go);
    }
  }

  @Workflow('review.parent')
  class Parent {
    async run(ctx: WorkflowContext) {
      return ctx.executeChild('child', Child, null);
    }
  }

  it('still applies parentClose to the child it created', async () => {
    const store = new SlowChildren();
    app = await createTestApp([Child, Parent], { store });
    const handle = await app.client.start(Parent, null, { id: 'parent' });
    const drained = app.worker.drain({ limit: 1 });
    await store.creating.promise;
    await app.client.terminate(handle.id);
    await settle();
    store.release.resolve();
    await drained;
    expect((await handle.status()).status).toBe('cancelled');
    await app.worker.drain();
    const [child] = await app.client.list({ parentId: 'parent' });
    expect(child?.id).toBe('parent/child');
    expect(child?.status).toBe('cancelled');
    expect(child?.error?.name).toBe('WorkflowCancelledError');
  });
});
