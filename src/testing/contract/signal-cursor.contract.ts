import type { WorkflowStore } from '../../storage/workflow-store.js';
import { newInstance, newSignal, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** The signals of `name` (no key) that a first wait of the instance `id` can take, by their payloads' `from`. */
async function takeable(store: WorkflowStore, id: string, name: string): Promise<string[]> {
  const instance = await store.get(id);
  const signals = await store.signals({
    name,
    key: null,
    afterId: instance!.signalCursor,
    upToId: Number.MAX_SAFE_INTEGER,
  });
  return signals.map((signal) => (signal.payload as { from: string }).from);
}

/**
 * A new instance's signal cursor, the rule users read in docs/workflows.md ("Signals"): an instance
 * takes every signal for its wait sent after it was created and none sent before, whatever order
 * the signals commit in and whatever other topics' signals do. A signal is sent when its
 * `signal()` runs, in an application's transaction too (not when that transaction commits).
 */
export function signalCursorContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('signal cursor of a new instance', () => {
    it('an instance takes the signals sent after it was created, none sent before', async () => {
      const s = testScope();
      const name = s.signal('cursor');
      await suite.store.signal(newSignal(name, { payload: { from: 'before' } }));
      await suite.store.create(newInstance(s.id('i'), s.workflow));
      await suite.store.signal(newSignal(name, { payload: { from: 'after' } }));
      expect(await takeable(suite.store, s.id('i'), name)).toEqual(['after']);
    });

    const open = suite.appTransaction;
    const withTransactions = open
      ? it
      : (title: string, fn: () => Promise<void>) => describe.skip(title, () => it(title, fn));
    for (const otherTopic of [false, true]) {
      withTransactions(
        `a signal sent in a transaction before an instance was created is not its, though it commits after${
          otherTopic ? ', and after a signal of another topic with a higher id' : ''
        }`,
        async () => {
          const s = testScope();
          const [name, other] = [s.signal('held'), s.signal('other')];
          const tx = await open!();
          let created: Promise<unknown> | undefined;
          try {
            // The id is drawn now; the signal commits only after the instance was created.
            await suite.store.signalInTransaction!(tx.handle, newSignal(name, { payload: { from: 'held' } }));
            if (otherTopic) await suite.store.signal(newSignal(other, { payload: { from: 'other' } }));
            created = suite.store.create(newInstance(s.id('i'), s.workflow));
            // A store may make the create wait for the signal in flight; it is committed meanwhile.
            await Promise.race([created, new Promise((resolve) => setTimeout(resolve, 200))]);
            await tx.commit();
          } catch (error) {
            await tx.rollback();
            throw error;
          }
          await created;
          await suite.store.signal(newSignal(name, { payload: { from: 'after' } }));
          expect(await takeable(suite.store, s.id('i'), name)).toEqual(['after']);
          if (otherTopic) expect(await takeable(suite.store, s.id('i'), other)).toEqual([]);
        },
      );
    }
  });
}
