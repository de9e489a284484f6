import { afterEach, describe, expect, it, vi } from 'vitest';
import { Injectable, Logger } from '@nestjs/common';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowChildFailedError,
  WorkflowSignal,
  type NewWorkflowInstance,
  type WorkflowContext,
  type WorkflowReopen,
  type WorkflowWrite,
} from '../../src/index.js';
import { createTestApp, type TestApp } from './helpers.js';

const go = new WorkflowSignal<string>('child.go');

@Injectable()
class Calls {
  log: string[] = [];
}

@Workflow('children.child')
class Child {
  constructor(private readonly calls: Calls) {}
  async run(ctx: WorkflowContext, input: { n: number; fail?: boolean; wait?: boolean }) {
    await ctx.step('work', () => this.calls.log.push(`child ${input.n}`), {
      compensate: () => this.calls.log.push(`undo child ${input.n}`),
    });
    if (input.wait) await ctx.waitForSignal('go', go, { key: ctx.id });
    if (input.fail) throw new Error(`child ${input.n} broke`);
    return input.n * 10;
  }
}

@Workflow('children.parent')
class Parent {
  async run(ctx: WorkflowContext, input: { fail?: boolean; parentClose?: 'cancel' | 'terminate' | 'abandon' }) {
    const first = await ctx.executeChild('first', Child, { n: 1 });
    const handles = await Promise.all([
      ctx.startChild('second', Child, { n: 2 }),
      ctx.startChild('third', 'children.child', { n: 3, fail: input.fail }),
    ]);
    const rest = await Promise.all(handles.map((h) => h.result()));
    return [first, ...rest];
  }
}

@Workflow('children.closer')
class Closer {
  async run(ctx: WorkflowContext, input: { parentClose: 'cancel' | 'terminate' | 'abandon' }) {
    await ctx.startChild('waiter', Child, { n: 9, wait: true }, { parentClose: input.parentClose });
    await ctx.waitForSignal('never', go, { key: 'never' });
  }
}

@Workflow('children.awaiting')
class Awaiting {
  async run(ctx: WorkflowContext) {
    return ctx.executeChild('child', Child, { n: 5, wait: true });
  }
}

let app: TestApp;
afterEach(async () => {
  await app?.close();
  vi.restoreAllMocks();
});

/** Captures the error log, where the worker reports the write `CrashAfterChild` fails on purpose. */
function captureErrors(): () => string[] {
  const spy = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  return () => spy.mock.calls.map((call) => String(call[0]));
}

/** The one line the worker logs for the write `CrashAfterChild` failed, executing instance `id`. */
const lostWrite = (id: string) =>
  expect.stringMatching(
    new RegExp(`^The workflow store failed while executing "${id}": connection lost\\. This worker backs off`),
  );

/** A store whose write fails once right after a child is created: the parent's record of it is lost. */
class CrashAfterChild extends InMemoryWorkflowStore {
  crash = false;
  crashed = false;
  override async create(instance: NewWorkflowInstance) {
    const result = await super.create(instance);
    if (instance.parentId && !this.crashed) this.crash = this.crashed = true;
    return result;
  }
  override async write(id: string, token: string, write: WorkflowWrite) {
    if (this.crash) {
      this.crash = false;
      throw new Error('connection lost');
    }
    return super.write(id, token, write);
  }
}

describe('children', () => {
  it('runs children, and each end reaches the parent', async () => {
    app = await createTestApp([Calls, Child, Parent]);
    const handle = await app.client.start(Parent, {}, { id: 'p' });
    await app.worker.drain();
    expect(await handle.result()).toEqual([10, 20, 30]);
    const status = await app.client.getStatus('p', { children: true });
    expect(status.children!.map((c) => [c.id, c.status, c.parentId, c.parentClose])).toEqual([
      ['p/first', 'completed', 'p', 'cancel'],
      ['p/second', 'completed', 'p', 'cancel'],
      ['p/third', 'completed', 'p', 'cancel'],
    ]);
    expect(app.module.get(Calls).log.sort()).toEqual(['child 1', 'child 2', 'child 3']);
  });

  it("surfaces a child's failure as WorkflowChildFailedError carrying the child's error", async () => {
    let caught: unknown;
    @Workflow('children.catching')
    class Catching {
      async run(ctx: WorkflowContext) {
        try {
          await ctx.executeChild('bad', Child, { n: 4, fail: true });
        } catch (error) {
          caught = error;
          return 'handled';
        }
      }
    }
    app = await createTestApp([Calls, Child, Catching]);
    const handle = await app.client.start(Catching, null);
    await app.worker.drain();
    expect(await handle.result()).toBe('handled');
    expect(caught).toBeInstanceOf(WorkflowChildFailedError);
    expect((caught as WorkflowChildFailedError).childError).toMatchObject({ message: 'child 4 broke' });
  });

  it('reuses the same child when the parent starts it again after a crash', async () => {
    const store = new CrashAfterChild();
    const errors = captureErrors();
    app = await createTestApp([Calls, Child, Parent], { store });
    const handle = await app.client.start(Parent, {}, { id: 'crashy' });
    await app.worker.drain({ limit: 1 });
    expect((await app.client.getStatus('crashy', { journal: true })).journal).toEqual([]);
    expect((await app.client.list({ parentId: 'crashy' })).map((c) => c.id)).toEqual(['crashy/first']);
    app.clock.advance('31s'); // the parent's lease lapses
    await app.worker.drain();
    expect(await handle.result({ timeout: 1000 })).toEqual([10, 20, 30]);
    expect((await app.client.list({ parentId: 'crashy' })).map((c) => c.id)).toEqual([
      'crashy/first',
      'crashy/second',
      'crashy/third',
    ]);
    expect(app.module.get(Calls).log.filter((l) => l === 'child 1')).toHaveLength(1);
    expect(errors()).toEqual([lostWrite('crashy')]);
  });

  for (const [policy, expected] of [
    ['cancel', { status: 'cancelled', error: 'WorkflowCancelledError', undone: true }],
    ['terminate', { status: 'cancelled', error: 'WorkflowTerminatedError', undone: false }],
    ['abandon', { status: 'suspended', error: null, undone: false }],
  ] as const) {
    it(`applies parentClose '${policy}' to an unfinished child when the parent ends`, async () => {
      app = await createTestApp([Calls, Child, Closer]);
      const handle = await app.client.start(Closer, { parentClose: policy }, { id: `closer-${policy}` });
      await app.worker.drain();
      await app.client.terminate(handle.id, 'stop the parent');
      await app.worker.drain();
      expect((await handle.status()).status).toBe('cancelled');
      const child = await app.client.getStatus(`closer-${policy}/waiter`);
      expect(child.status).toBe(expected.status);
      expect(child.error?.name ?? null).toBe(expected.error);
      expect(app.module.get(Calls).log.includes('undo child 9')).toBe(expected.undone);
    });
  }

  it("gives a parent its child's result long after the child ended, even when purge() ran in between", async () => {
    @Workflow('children.late')
    class Late {
      async run(ctx: WorkflowContext) {
        const handle = await ctx.startChild('c', Child, { n: 6 });
        await ctx.sleep('wait', '60d');
        return handle.result();
      }
    }
    app = await createTestApp([Calls, Child, Late]);
    const handle = await app.client.start(Late, null, { id: 'late' });
    await app.worker.drain();
    expect((await app.client.getStatus('late/c')).status).toBe('completed');
    await app.client.signal(go, 'later', { key: 'someone-else' }); // purge never removes the newest signal
    app.clock.advance('31d');
    for (const statuses of [['failed'] as const, undefined]) {
      const purged = await app.client.purge({ olderThan: '30d', ...(statuses ? { statuses: [...statuses] } : {}) });
      expect(purged).toMatchObject({ instances: 0, signals: 0 });
    }
    expect((await app.client.getStatus('late/c')).status).toBe('completed');
    app.clock.advance('30d');
    await app.worker.drain();
    expect(await handle.result({ timeout: 1000 })).toBe(60);
    // Once the parent has ended, its child and the child's end go like anything else.
    app.clock.advance('31d');
    await app.client.signal(go, 'last', { key: 'someone-else' });
    expect(await app.client.purge({ olderThan: '30d' })).toMatchObject({ instances: 2, signals: 2 });
  });

  it("refuses to delete a finished child while its parent is unfinished, so a purge can't strand the parent", async () => {
    @Workflow('children.late-delete')
    class LateDelete {
      async run(ctx: WorkflowContext) {
        const handle = await ctx.startChild('c', Child, { n: 7 });
        await ctx.sleep('wait', '60d');
        return handle.result();
      }
    }
    app = await createTestApp([Calls, Child, LateDelete]);
    const handle = await app.client.start(LateDelete, null, { id: 'late-delete' });
    await app.worker.drain();
    expect((await app.client.getStatus('late-delete/c')).status).toBe('completed');
    const refused = app.client.delete('late-delete/c');
    await expect(refused).rejects.toMatchObject({ name: 'WorkflowInvalidStateError' });
    await expect(refused).rejects.toThrow(
      /child of instance "late-delete", which is suspended.*Let the parent end first/,
    );
    expect((await app.client.getStatus('late-delete/c')).status).toBe('completed');
    await app.client.signal(go, 'later', { key: 'someone-else' }); // purge never removes the newest signal
    app.clock.advance('31d');
    await app.client.purge({ olderThan: '30d' });
    app.clock.advance('30d');
    await app.worker.drain();
    expect(await handle.result({ timeout: 1000 })).toBe(70);
    // Once the parent has ended, the child goes like any finished instance.
    await app.client.delete('late-delete/c');
    await expect(app.client.getStatus('late-delete/c')).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
  });

  describe("retry() of a parent that ended before taking a child's end that purge() then removed", () => {
    @Workflow('children.sleepy')
    class Sleepy {
      async run(ctx: WorkflowContext, input: { fail?: boolean }) {
        const handle = await ctx.startChild('c', Child, { n: 8, fail: input.fail });
        await ctx.sleep('wait', '60d');
        return handle.result();
      }
    }

    /** Starts `p`, whose child ends at once; cancels `p` during its sleep, then purges what `statuses` lists, 31 days on. */
    async function cancelledThenPurged(
      input: { fail?: boolean },
      statuses: Array<'completed' | 'failed' | 'cancelled'>,
    ): Promise<void> {
      app = await createTestApp([Calls, Child, Sleepy]);
      await app.client.start(Sleepy, input, { id: 'p' });
      await app.worker.drain();
      expect((await app.client.getStatus('p/c')).status).toBe(input.fail ? 'failed' : 'completed');
      await app.client.cancel('p');
      await app.worker.drain();
      expect((await app.client.getStatus('p')).status).toBe('cancelled');
      await app.client.signal(go, 'later', { key: 'someone-else' }); // purge never removes the newest signal
      app.clock.advance('31d');
      expect((await app.client.purge({ olderThan: '30d', statuses })).signals).toBeGreaterThan(0);
    }

    it("sends a completed child's end again from the child, so the retried parent takes it", async () => {
      await cancelledThenPurged({}, ['failed']);
      expect((await app.client.getStatus('p/c')).status).toBe('completed');
      await app.client.retry('p');
      await app.worker.drain();
      app.clock.advance('30d');
      await app.worker.drain();
      expect(await app.client.getStatus('p')).toMatchObject({ status: 'completed', output: 80 });
    });

    it('refuses the retry, changing nothing, when the child is gone too', async () => {
      await cancelledThenPurged({}, ['completed']);
      await expect(app.client.getStatus('p/c')).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
      const retried = app.client.retry('p');
      await expect(retried).rejects.toMatchObject({ name: 'WorkflowInvalidStateError' });
      await expect(retried).rejects.toThrow(/child "p\/c".*is gone/);
      expect((await app.client.getStatus('p')).status).toBe('cancelled');
    });

    it("refuses the retry of a parent whose failed child's end was purged until the child was retried", async () => {
      await cancelledThenPurged({ fail: true }, ['completed']);
      expect((await app.client.getStatus('p/c')).status).toBe('failed');
      const retried = app.client.retry('p');
      await expect(retried).rejects.toMatchObject({ name: 'WorkflowInvalidStateError' });
      await expect(retried).rejects.toThrow(/Retry the child first/);
      expect((await app.client.getStatus('p')).status).toBe('cancelled');
      // Retried, the child ends again (and fails again): its new end reaches the retried parent.
      await app.client.retry('p/c');
      await app.client.retry('p');
      await app.worker.drain();
      app.clock.advance('30d');
      await app.worker.drain();
      expect(await app.client.getStatus('p')).toMatchObject({
        status: 'failed',
        error: { name: 'WorkflowChildFailedError' },
      });
    });
  });

  describe('retry() of a parent whose child was still running when the parent ended', () => {
    /** Starts `p`, cancels it while its child waits: the child is cancelled too (parentClose 'cancel'). */
    async function cancelledWithChild(): Promise<string> {
      app = await createTestApp([Calls, Child, Awaiting]);
      await app.client.start(Awaiting, null, { id: 'p' });
      await app.worker.drain();
      await app.client.cancel('p');
      await app.worker.drain();
      expect((await app.client.getStatus('p')).status).toBe('cancelled');
      expect((await app.client.getStatus('p/child')).status).toBe('cancelled');
      return 'p/child';
    }

    async function retryChildToCompletion(childId: string): Promise<void> {
      await app.client.retry(childId);
      await app.worker.drain();
      expect((await app.client.getStatus(childId)).status).toBe('suspended');
      await app.client.signal(go, 'now', { key: childId });
      await app.worker.drain();
      expect((await app.client.getStatus(childId)).status).toBe('completed');
    }

    it("takes the child's end after the child was retried, not the end it had before", async () => {
      const childId = await cancelledWithChild();
      await retryChildToCompletion(childId);
      await app.client.retry('p');
      await app.worker.drain();
      expect(await app.client.handle('p').result({ timeout: 1000 })).toBe(50);
    });

    it('waits for the child while it runs again, and takes its new end', async () => {
      const childId = await cancelledWithChild();
      await app.client.retry(childId);
      await app.client.retry('p');
      await app.worker.drain();
      expect((await app.client.getStatus('p')).status).toBe('suspended');
      await app.client.signal(go, 'now', { key: childId });
      await app.worker.drain();
      expect(await app.client.handle('p').result({ timeout: 1000 })).toBe(50);
    });

    it("fails again on the child's end while the child is still cancelled, and takes its new end once the child was retried", async () => {
      const childId = await cancelledWithChild();
      await app.client.retry('p');
      await app.worker.drain();
      const failed = await app.client.getStatus('p');
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatchObject({ name: 'WorkflowChildFailedError' });
      await retryChildToCompletion(childId);
      await app.client.retry('p');
      await app.worker.drain();
      expect(await app.client.handle('p').result({ timeout: 1000 })).toBe(50);
    });

    it("keeps the child's end it took while the child was not retried since, even once purge() removed that end's signal", async () => {
      const childId = await cancelledWithChild();
      await app.client.retry('p');
      await app.worker.drain();
      const failed = await app.client.getStatus('p');
      expect(failed.error).toMatchObject({ name: 'WorkflowChildFailedError' });
      await app.client.signal(go, 'later', { key: 'someone-else' }); // purge never removes the newest signal
      app.clock.advance('31d');
      expect((await app.client.purge({ olderThan: '30d', statuses: ['completed'] })).signals).toBeGreaterThan(0);
      await app.client.retry('p');
      await app.worker.drain();
      // Read again, the end would be gone and the parent would wait for it forever.
      expect(await app.client.getStatus('p')).toMatchObject({ status: 'failed', error: failed.error });
      expect((await app.client.getStatus(childId)).status).toBe('cancelled');
    });

    it("takes the child's end that lands while the parent's retry is under way (between its read and its reopen)", async () => {
      /** Runs `between` inside the parent's reopen, before it lands. */
      class Interleaved extends InMemoryWorkflowStore {
        between: (() => Promise<void>) | null = null;
        override async reopen(id: string, reopen: WorkflowReopen) {
          const between = id === 'p' ? this.between : null;
          this.between = null;
          if (between) await between();
          return super.reopen(id, reopen);
        }
      }
      const store = new Interleaved();
      app = await createTestApp([Calls, Child, Awaiting], { store });
      await app.client.start(Awaiting, null, { id: 'p' });
      await app.worker.drain();
      await app.client.cancel('p');
      await app.worker.drain();
      await app.client.retry('p');
      await app.worker.drain();
      expect((await app.client.getStatus('p')).status).toBe('failed');
      await app.client.retry('p/child');
      await app.worker.drain();
      store.between = async () => {
        await app.client.signal(go, 'now', { key: 'p/child' });
        await app.worker.drain();
        expect((await app.client.getStatus('p/child')).status).toBe('completed');
      };
      await app.client.retry('p');
      expect(store.between).toBeNull();
      await app.worker.drain();
      expect(await app.client.handle('p').result({ timeout: 1000 })).toBe(50);
    });
  });
});

describe('parentClose after an execution that created a child and stopped before recording it', () => {
  @Workflow('children.slow-parent', { timeout: '1h' })
  class SlowParent {
    async run(ctx: WorkflowContext) {
      return ctx.executeChild('child', Child, { n: 7, wait: true });
    }
  }

  for (const [end, expected] of [
    ['terminate', 'WorkflowTerminatedError'],
    ['cancel', 'WorkflowCancelledError'],
    ['timeout', 'WorkflowTimeoutError'],
  ] as const) {
    it(`cancels the child the journal never named when the parent ends by ${end}`, async () => {
      const errors = captureErrors();
      app = await createTestApp([Calls, Child, SlowParent], { store: new CrashAfterChild() });
      const handle = await app.client.start(SlowParent, null, { id: 'lost' });
      await app.worker.drain({ limit: 1 });
      expect((await app.client.getStatus('lost', { journal: true })).journal).toEqual([]);
      expect((await app.client.getStatus('lost/child')).status).toBe('pending');
      if (end === 'terminate') await app.client.terminate('lost', 'stop');
      if (end === 'cancel') await app.client.cancel('lost', 'stop');
      app.clock.advance(end === 'timeout' ? '1h' : '31s'); // the parent's lease lapses (and, for a timeout, its deadline passes)
      await app.worker.drain();
      await expect(handle.result({ timeout: 1000 })).rejects.toMatchObject({ name: expected });
      const child = await app.client.getStatus('lost/child');
      expect(child.status).toBe('cancelled');
      expect(child.error?.name).toBe('WorkflowCancelledError');
      expect(app.module.get(Calls).log).toEqual(['child 7', 'undo child 7']);
      expect(errors()).toEqual([lostWrite('lost')]);
    });
  }
});
