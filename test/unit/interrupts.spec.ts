import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import type { NewWorkflowInstance } from '../../src/storage/workflow-store.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// What an execution does when it is stopped while something of it runs: a terminate, the run
// deadline or a shutdown arriving during a step, a compensation or a child's creation.

const go = new WorkflowSignal<null>('interrupts.go');

let app: EngineApp;
afterEach(async () => app?.close());

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

  @Workflow('interrupts.slow-step')
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
    app = await createEngineApp({ workflows: [SlowStep] });
    const handle = await app.client.start(SlowStep, null);
    const drained = app.worker.drain();
    await gate.started.promise;
    await app.client.terminate(handle.id, 'stop now');
    await drained;
    expect((await handle.status()).status).toBe('cancelled');
    gate.release.resolve();
    await settle();
    const types = app.events.filter((e) => 'id' in e && e.id === handle.id).map((e) => e.type);
    expect(types).toEqual(['workflow-started', 'workflow-cancelled']);
    const status = await handle.status({ journal: true });
    expect(status.journal).toEqual([]);
  });
});

describe('the run deadline while a step runs', () => {
  const seen = { started: deferred(), aborted: false };

  @Workflow('interrupts.deadline', { timeout: '1h' })
  class PastDeadline {
    async run(ctx: WorkflowContext) {
      await ctx.step(
        'long',
        ({ signal }) =>
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
    app = await createEngineApp({
      workflows: [PastDeadline],
      worker: { enabled: false, leaseDuration: '1m', heartbeatInterval: 20 },
    });
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

  @Workflow('interrupts.cancel-shutdown')
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
    app = await createEngineApp({ workflows: [Booking] });
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

  @Workflow('interrupts.child')
  class Child {
    async run(ctx: WorkflowContext) {
      await ctx.waitForSignal('never', go);
    }
  }

  @Workflow('interrupts.parent')
  class Parent {
    async run(ctx: WorkflowContext) {
      return ctx.executeChild('child', Child, null);
    }
  }

  it('still applies parentClose to the child it created', async () => {
    const store = new SlowChildren();
    app = await createEngineApp({ workflows: [Child, Parent], store });
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

describe('terminate while a cancel compensates', () => {
  const gate = { started: deferred(), release: deferred() };

  @Workflow('interrupts.cancel-then-terminate')
  class Refunds {
    async run(ctx: WorkflowContext) {
      await ctx.step('charge', async () => 'ch-1', {
        compensate: async () => {
          gate.started.resolve();
          await gate.release.promise;
        },
      });
      await ctx.waitForSignal('never', go);
    }
  }

  it("ends with the terminate's reason, not the cancel's it was compensating for", async () => {
    app = await createEngineApp({ workflows: [Refunds] });
    const handle = await app.client.start(Refunds, null);
    await app.worker.drain();
    await app.client.cancel(handle.id, 'customer asked');
    const drained = app.worker.drain();
    await gate.started.promise;
    await app.client.terminate(handle.id, 'refund stuck');
    await drained;
    gate.release.resolve();
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowTerminatedError', message: 'refund stuck' });
  });
});
