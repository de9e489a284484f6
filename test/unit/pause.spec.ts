import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowInvalidStateError,
  WorkflowNotFoundError,
  WorkflowSignal,
  type WorkflowContext,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// pause() and resume() of instances, pauseWorkflow() and resumeWorkflow(): what an execution does
// when it is paused while it runs, and what a paused instance keeps (its signals, its wake-ups).

let app: EngineApp;
afterEach(async () => app?.close());

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const go = new WorkflowSignal<{ n: number }>('pause.go');

describe('pause while a step runs', () => {
  const gate = { started: deferred(), release: deferred() };
  const runs = { first: 0, second: 0 };

  @Workflow('pause.two-steps')
  class TwoSteps {
    async run(ctx: WorkflowContext) {
      const a = await ctx.step('first', async () => {
        runs.first += 1;
        gate.started.resolve();
        await gate.release.promise;
        return 'a';
      });
      const b = await ctx.step('second', () => {
        runs.second += 1;
        return 'b';
      });
      return a + b;
    }
  }

  it('lets the running step finish and record its result, runs nothing after it, and carries on from there at resume', async () => {
    app = await createEngineApp({ workflows: [TwoSteps] });
    const handle = await app.client.start(TwoSteps, null);
    const drained = app.worker.drain();
    await gate.started.promise;
    await app.client.pause(handle.id, 'investigating');
    gate.release.resolve();
    await drained;
    const paused = await handle.status({ journal: true });
    expect(paused).toMatchObject({ status: 'paused', pauseReason: 'investigating' });
    expect(paused.journal!.map((e) => [e.name, e.state])).toEqual([['first', 'completed']]);
    expect(runs).toEqual({ first: 1, second: 0 });
    // Nothing claims it while paused, however long the wait.
    app.clock.advance('1h');
    expect(await app.worker.drain()).toBe(0);
    await app.client.resume(handle.id);
    await app.worker.drain();
    expect(await handle.result()).toBe('ab');
    expect(runs).toEqual({ first: 1, second: 1 });
    const types = app.events.filter((e) => 'id' in e && e.id === handle.id).map((e) => e.type);
    expect(types).toEqual([
      'workflow-started',
      'workflow-paused',
      'step-completed',
      'workflow-resumed',
      'workflow-resumed',
      'step-completed',
      'workflow-completed',
    ]);
    expect(app.events.find((e) => e.type === 'workflow-resumed' && 'unpaused' in e)).toMatchObject({
      unpaused: true,
    });
  });
});

describe('a paused instance', () => {
  @Workflow('pause.sleeper')
  class Sleeper {
    async run(ctx: WorkflowContext) {
      await ctx.sleep('nap', '10m');
      const got = await ctx.waitForSignal('go', go, { timeout: '1h' });
      return got.n;
    }
  }

  it('takes its sleep at resume when it fell due meanwhile (no time added), and keeps a signal sent while paused', async () => {
    app = await createEngineApp({ workflows: [Sleeper] });
    const handle = await app.client.start(Sleeper, null);
    await app.worker.drain();
    await app.client.pause(handle.id);
    expect((await handle.status()).status).toBe('paused');
    app.clock.advance('30m');
    expect(await app.worker.drain()).toBe(0);
    await app.client.resume(handle.id);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    await app.client.pause(handle.id);
    await app.client.signal(go, { n: 7 });
    expect(await app.worker.drain()).toBe(0);
    await app.client.resume(handle.id);
    await app.worker.drain();
    expect(await handle.result()).toBe(7);
  });

  it('is cancelled by cancel() (the pause ends) and terminated by terminate()', async () => {
    app = await createEngineApp({ workflows: [Sleeper] });
    const a = await app.client.start(Sleeper, null);
    const b = await app.client.start(Sleeper, null);
    await app.worker.drain();
    await app.client.pause(a.id);
    await app.client.pause(b.id);
    await app.client.cancel(a.id, 'no longer needed');
    await app.client.terminate(b.id, 'stop');
    await app.worker.drain();
    expect(await a.status()).toMatchObject({ status: 'cancelled', error: { name: 'WorkflowCancelledError' } });
    expect(await b.status()).toMatchObject({ status: 'cancelled', error: { name: 'WorkflowTerminatedError' } });
  });

  it('pausing it again or resuming one that is not paused changes nothing; a finished one throws; an unknown id throws', async () => {
    app = await createEngineApp({ workflows: [Sleeper] });
    const handle = await app.client.start(Sleeper, null);
    await app.client.resume(handle.id);
    expect((await handle.status()).status).toBe('pending');
    await app.client.pause(handle.id, 'first');
    await app.client.pause(handle.id, 'second');
    expect(await handle.status()).toMatchObject({ status: 'paused', pauseReason: 'first' });
    expect(app.events.filter((e) => e.type === 'workflow-paused')).toHaveLength(1);
    await app.client.terminate(handle.id);
    await app.worker.drain();
    await expect(app.client.pause(handle.id)).rejects.toThrow(WorkflowInvalidStateError);
    await expect(app.client.resume(handle.id)).rejects.toThrow(/is cancelled and can't be resumed/);
    await expect(app.client.pause('no-such-id')).rejects.toThrow(WorkflowNotFoundError);
    await expect(app.client.resume('no-such-id')).rejects.toThrow(WorkflowNotFoundError);
  });

  it('refuses a reason that is not a string, with nothing stored', async () => {
    app = await createEngineApp({ workflows: [Sleeper] });
    const handle = await app.client.start(Sleeper, null);
    await expect(app.client.pause(handle.id, 42 as never)).rejects.toThrow(/Invalid pause reason: 42\. Use a string\./);
    await expect(app.client.pause(handle.id, 'x', { nope: 1 } as never)).rejects.toThrow(/nope/);
    expect((await handle.status()).status).toBe('pending');
  });
});

describe('pauseWorkflow', () => {
  @Workflow('pause.quick')
  class Quick {
    async run(ctx: WorkflowContext) {
      return ctx.step('only', () => 'done');
    }
  }

  @Workflow('pause.quick', { version: 2 })
  class QuickV2 {
    async run(ctx: WorkflowContext) {
      return ctx.step('only', () => 'done v2');
    }
  }

  it('holds back every instance of the workflow, new starts included, until resumed; a version pause holds back that version', async () => {
    const store = new InMemoryWorkflowStore();
    app = await createEngineApp({ workflows: [Quick, QuickV2], store });
    await app.client.pauseWorkflow(Quick, { reason: 'a fix ships' });
    const v1 = await app.client.start('pause.quick', null, { version: 1 });
    const v2 = await app.client.start(QuickV2, null);
    expect(await app.worker.drain()).toBe(0);
    expect((await v1.status()).status).toBe('pending');
    expect(await app.client.pausedWorkflows()).toEqual([
      { workflow: 'pause.quick', version: null, reason: 'a fix ships', pausedAt: app.clock.now() },
    ]);
    await app.client.pauseWorkflow('pause.quick', { version: 2 });
    await app.client.resumeWorkflow(Quick);
    expect(await app.worker.drain()).toBe(1);
    expect(await v1.result()).toBe('done');
    expect((await v2.status()).status).toBe('pending');
    await app.client.resumeWorkflow('pause.quick', { version: 2 });
    await app.worker.drain();
    expect(await v2.result()).toBe('done v2');
  });

  it('refuses a bad workflow or version, with nothing stored', async () => {
    app = await createEngineApp({ workflows: [Quick] });
    await expect(app.client.pauseWorkflow('' as never)).rejects.toThrow(/Invalid workflow for pauseWorkflow\(\)/);
    await expect(app.client.pauseWorkflow('pause.quick', { version: 0 })).rejects.toThrow(
      /Use a positive integer, or leave it out for every version/,
    );
    await expect(app.client.resumeWorkflow('pause.quick', { version: 1.5 })).rejects.toThrow(/positive integer/);
    expect(await app.client.pausedWorkflows()).toEqual([]);
  });
});
