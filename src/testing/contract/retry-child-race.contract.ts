import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { WorkflowSignal } from '../../signals/workflow-signal.js';
import { CHILD_ENDED_SIGNAL } from '../../storage/workflow-store-signals.js';
import type { WorkflowReopen, WorkflowStore } from '../../storage/workflow-store.js';
import { ManualWorkflowClock } from '../../time/manual-workflow-clock.js';
import { purgeSpan, runWorkflowName, testScope } from '../store-fixtures.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite, WorkflowContractTestApi } from './contract-suite.js';

/** A signal of another topic: purge never removes the newest signal, so the tests send one after the child's end. */
const other = new WorkflowSignal<string>('race.other');

@Workflow(runWorkflowName('race.child'))
export class RaceChild {
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('work', () => n * 10);
  }
}

/** Starts its child `<id>/c`, which ends at once, and asks for its result only after a long sleep. */
@Workflow(runWorkflowName('race.parent'))
export class RaceParent {
  async run(ctx: WorkflowContext, n: number) {
    const handle = await ctx.startChild('c', RaceChild, n);
    await ctx.sleep('wait', '60d');
    return handle.result();
  }
}

/**
 * Parent `parent` started child `<parent>/c` (which completed at once) and sleeps; it is cancelled
 * in its sleep and 31 days pass: a `retry(parent)` now finds a finished child that `purge()` may remove.
 */
export async function cancelledParentAMonthLater(
  engine: ContractEngine,
  parent: string,
  expect: WorkflowContractTestApi['expect'],
): Promise<void> {
  await engine.client.start(RaceParent, 7, { id: parent });
  await engine.drain();
  expect((await engine.client.getStatus(`${parent}/c`)).status).toBe('completed');
  await engine.client.cancel(parent);
  await engine.drain();
  expect((await engine.client.getStatus(parent)).status).toBe('cancelled');
  await engine.client.signal(other, 'later', { key: `${parent}:someone-else` }); // purge never removes the newest signal
  engine.clock.advance('31d');
}

/** How many `$child-ended` signals of `child` the store holds. */
export async function childEnds(store: WorkflowStore, child: string): Promise<number> {
  return (await store.signals({ name: CHILD_ENDED_SIGNAL, key: child, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }))
    .length;
}

/** `store`, running `beforeReopen` (once, when set) right before the next `reopen()` goes to it. */
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

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * `retry()` of a finished parent checks each child's end before it reopens the parent (sends a
 * completed child's purged end again, refuses a child that is gone). A `purge()` or `delete()` that
 * lands between that check and the reopen must not strand the parent: reopened, it would wait
 * forever for an end that no longer exists. A store wrapper runs the purge or delete right before
 * the store's `reopen()`. The tests purge, so each runs in a purge span of its own.
 */
export function retryChildRaceContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('retry() of a parent racing a purge() or delete() of its child', () => {
    const engines = contractEngines(suite);

    /**
     * Parent `p` starts child `p/c` (which completes at once) and sleeps; it is cancelled during its
     * sleep, 31 days pass, and `retry(p)` runs with `race` landing between its check of the child
     * and the reopen.
     */
    async function scenario(
      race: (engine: ContractEngine, parent: string) => Promise<void>,
      body: (engine: ContractEngine, parent: string, retried: Promise<void>) => Promise<void>,
    ): Promise<void> {
      const clock = new ManualWorkflowClock(await purgeSpan(suite.store));
      const control = racing(suite.store);
      const engine = engines.open({ workflows: [RaceChild, RaceParent], clock }, control.store);
      const parent = testScope().id('p');
      await cancelledParentAMonthLater(engine, parent, expect);
      control.beforeReopen = () => race(engine, parent);
      const retried = engine.client.retry(parent);
      retried.catch(() => undefined);
      await body(engine, parent, retried);
    }

    it("sends the child's end again when purge() removed it between retry's check and the reopen", async () => {
      await scenario(
        async (engine, parent) => {
          expect((await engine.client.purge({ olderThan: '30d', statuses: ['failed'] })).signals).toBeGreaterThan(0);
          expect(await childEnds(suite.store, `${parent}/c`)).toBe(0);
        },
        async (engine, parent, retried) => {
          await retried;
          await engine.drain();
          engine.clock.advance('30d');
          await engine.drain();
          expect(await engine.client.getStatus(parent)).toMatchObject({ status: 'completed', output: 70 });
        },
      );
    });

    it('refuses the retry, changing nothing, when delete() removed the child between its check and the reopen', async () => {
      let before: unknown;
      await scenario(
        async (engine, parent) => {
          before = await suite.store.get(parent, { journal: true });
          await engine.client.delete(`${parent}/c`);
        },
        async (_engine, parent, retried) => {
          await expect(retried).rejects.toMatchObject({ name: 'WorkflowInvalidStateError' });
          await expect(retried).rejects.toThrow(
            new RegExp(`child "${escaped(`${parent}/c`)}".*is gone.*Start a new instance instead`),
          );
          expect(await suite.store.get(parent, { journal: true })).toEqual(before);
          expect(await childEnds(suite.store, `${parent}/c`)).toBe(1);
        },
      );
    });

    it('refuses the retry, changing nothing, when purge() removed the child and its end between its check and the reopen', async () => {
      let before: unknown;
      await scenario(
        async (engine, parent) => {
          before = await suite.store.get(parent, { journal: true });
          expect((await engine.client.purge({ olderThan: '30d', statuses: ['completed'] })).instances).toBe(1);
        },
        async (_engine, parent, retried) => {
          await expect(retried).rejects.toThrow(new RegExp(`child "${escaped(`${parent}/c`)}".*is gone`));
          expect(await suite.store.get(parent, { journal: true })).toEqual(before);
        },
      );
    });
  });
}
