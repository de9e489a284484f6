// retry() of a finished parent checks each child's end before it reopens the parent (sends a
// completed child's purged end again, refuses a child that is gone). A purge() or delete() that
// lands between that check and the reopen must not strand the parent: reopened, it would wait
// forever for an end that no longer exists. The same scenario on every store: a store wrapper runs
// the purge or delete right before the store's reopen, deterministically.
import { expect, it } from 'vitest';
import {
  Workflow,
  WorkflowSignal,
  type WorkflowContext,
  type WorkflowReopen,
  type WorkflowStore,
} from '../../src/index.js';
import { createTestApp, type TestApp } from './nest-test-app.js';

/** A signal of another topic: purge never removes the newest signal, so the tests send one after the child's end. */
export const other = new WorkflowSignal<string>('race.other');

@Workflow('race.child')
export class RaceChild {
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('work', () => n * 10);
  }
}

/** Starts its child, which ends at once, and asks for its result only after a long sleep. */
@Workflow('race.parent')
export class RaceParent {
  async run(ctx: WorkflowContext, n: number) {
    const handle = await ctx.startChild('c', RaceChild, n);
    await ctx.sleep('wait', '60d');
    return handle.result();
  }
}

/** `store`, running `before` (once, when set) right before the next `reopen()` goes to it. */
function racing(store: WorkflowStore): { store: WorkflowStore; beforeReopen?: () => Promise<void> } {
  const control: { store: WorkflowStore; beforeReopen?: () => Promise<void> } = { store };
  control.store = new Proxy(store, {
    get(target, prop) {
      if (prop === 'reopen') {
        return async (id: string, reopen: WorkflowReopen) => {
          const before = control.beforeReopen;
          control.beforeReopen = undefined;
          await before?.();
          return target.reopen(id, reopen);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return control;
}

/**
 * Parent `p` started child `p/c` (which completed at once) and sleeps; it is cancelled in its sleep
 * and 31 days pass: a `retry('p')` now finds a finished child that `purge()` may remove.
 */
export async function cancelledParentAMonthLater(app: TestApp): Promise<void> {
  await app.client.start(RaceParent, 7, { id: 'p' });
  await app.worker.drain();
  expect((await app.client.getStatus('p/c')).status).toBe('completed');
  await app.client.cancel('p');
  await app.worker.drain();
  expect((await app.client.getStatus('p')).status).toBe('cancelled');
  await app.client.signal(other, 'later', { key: 'someone-else' }); // purge never removes the newest signal
  app.clock.advance('31d');
}

export interface RetryChildRaceOptions {
  /** A store for one test (a fresh schema on a SQL server). */
  open(): Promise<WorkflowStore>;
  /** Releases what `open()` opened. */
  close(store: WorkflowStore): Promise<void>;
}

/**
 * Registers the tests. Each: parent `p` starts child `p/c` (which completes at once) and sleeps; it
 * is cancelled during its sleep, 31 days pass, and `retry('p')` runs with `race` landing between
 * its check of the child and the reopen.
 */
export function retryChildRaceTests(options: RetryChildRaceOptions): void {
  async function scenario(
    race: (app: TestApp) => Promise<void>,
    body: (app: TestApp, retried: Promise<void>) => Promise<void>,
  ): Promise<void> {
    const store = await options.open();
    const control = racing(store);
    const app = await createTestApp([RaceChild, RaceParent], { store: control.store });
    try {
      await cancelledParentAMonthLater(app);
      control.beforeReopen = () => race(app);
      const retried = app.client.retry('p');
      retried.catch(() => undefined);
      await body(app, retried);
    } finally {
      await app.close();
      await options.close(store);
    }
  }

  const endsOf = async (app: TestApp, id: string) =>
    (await app.store.signals({ name: '$child-ended', key: id, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).length;

  it("sends the child's end again when purge() removed it between retry's check and the reopen", async () => {
    await scenario(
      async (app) => {
        expect((await app.client.purge({ olderThan: '30d', statuses: ['failed'] })).signals).toBeGreaterThan(0);
        expect(await endsOf(app, 'p/c')).toBe(0);
      },
      async (app, retried) => {
        await retried;
        await app.worker.drain();
        app.clock.advance('30d');
        await app.worker.drain();
        expect(await app.client.getStatus('p')).toMatchObject({ status: 'completed', output: 70 });
      },
    );
  });

  it('refuses the retry, changing nothing, when delete() removed the child between its check and the reopen', async () => {
    let before: unknown;
    await scenario(
      async (app) => {
        before = await app.store.get('p', { journal: true });
        await app.client.delete('p/c');
      },
      async (app, retried) => {
        await expect(retried).rejects.toMatchObject({ name: 'WorkflowInvalidStateError' });
        await expect(retried).rejects.toThrow(/child "p\/c".*is gone.*Start a new instance instead/);
        expect(await app.store.get('p', { journal: true })).toEqual(before);
        expect(await endsOf(app, 'p/c')).toBe(1);
      },
    );
  });

  it('refuses the retry, changing nothing, when purge() removed the child and its end between its check and the reopen', async () => {
    let before: unknown;
    await scenario(
      async (app) => {
        before = await app.store.get('p', { journal: true });
        expect((await app.client.purge({ olderThan: '30d', statuses: ['completed'] })).instances).toBe(1);
      },
      async (app, retried) => {
        await expect(retried).rejects.toThrow(/child "p\/c".*is gone/);
        expect(await app.store.get('p', { journal: true })).toEqual(before);
      },
    );
  });
}
