import { BASE_TIME as T, lease, newInstance, settle, testScope } from '../store-fixtures.js';
import type { NewWorkflowInstance } from '../../storage/workflow-store.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * `countDue` (optional): what a claim could take now, counted up to a cap. `countUndeclaredDue`
 * (optional): what waited since `dueBefore` for a version the caller doesn't declare, per version.
 */
export function countDueContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('countDue', () => {
    it('countDue: counts unfinished instances due at now with no live lease (a lapsed one counts), up to cap', async () => {
      const store = suite.store;
      if (!store.countDue) return; // optional: this store reports no backlog
      const s = testScope();
      const now = T + 10_000;
      // Other tests' instances may be due too: count what this test adds.
      const before = await store.countDue(now, 1_000_000);
      for (const name of ['a', 'b', 'c']) await store.create(newInstance(s.id(name), s.workflow));
      await store.create(newInstance(s.id('later'), s.workflow, { wakeAt: now + 1 }));
      await lease(store, newInstance(s.id('held'), `${s.workflow}-held`), { leaseUntil: now + 30_000 });
      await lease(store, newInstance(s.id('lapsed'), `${s.workflow}-lapsed`), { leaseUntil: now - 1 });
      await settle(store, newInstance(s.id('done'), `${s.workflow}-done`), 'completed');
      expect(await store.countDue(now, 1_000_000)).toBe(before + 4);
      expect(await store.countDue(now, before + 2)).toBe(before + 2);
      expect(await store.countDue(T - 1, 1_000_000)).toBeLessThanOrEqual(before);
    });

    it('countUndeclaredDue: counts, per workflow version not declared, unfinished instances due at dueBefore with no lease or one lapsed before it, up to cap', async () => {
      const store = suite.store;
      if (!store.countUndeclaredDue) return; // optional: this store reports nothing
      const s = testScope();
      const dueBefore = T + 10_000;
      const v2 = (name: string, overrides: Partial<NewWorkflowInstance> = {}) =>
        newInstance(s.id(name), s.workflow, { version: 2, ...overrides });
      // Leased first: each lease() claims the oldest due instance of its version.
      await lease(store, v2('held'), { leaseUntil: dueBefore + 30_000 });
      await lease(store, v2('lapsed'), { leaseUntil: dueBefore - 1 });
      await lease(store, v2('lapsing'), { leaseUntil: dueBefore });
      await settle(store, v2('done'), 'completed');
      await settle(store, v2('waiting'), 'suspended');
      for (const name of ['a', 'b']) await store.create(v2(name));
      await store.create(v2('edge', { wakeAt: dueBefore }));
      await store.create(v2('later', { wakeAt: dueBefore + 1 }));
      await store.create(newInstance(s.id('declared'), s.workflow));
      await store.create(newInstance(s.id('gone'), `${s.workflow}-gone`));
      const workflows = [
        { name: s.workflow, version: 1 },
        { name: 'contract.unrelated', version: 7 },
      ];
      // Other tests' instances may be counted too: look at this test's workflows.
      const ours = async (query: { dueBefore: number; cap: number }) =>
        (await store.countUndeclaredDue!({ ...query, workflows })).filter(({ workflow }) =>
          workflow.startsWith(s.workflow),
        );
      expect(await ours({ dueBefore, cap: 1_000_000 })).toEqual([
        { workflow: s.workflow, version: 2, count: 4 },
        { workflow: `${s.workflow}-gone`, version: 1, count: 1 },
      ]);
      expect(await ours({ dueBefore: T - 1, cap: 1_000_000 })).toEqual([]);
      const capped = await store.countUndeclaredDue({ dueBefore, cap: 2, workflows });
      expect(capped.reduce((sum, { count }) => sum + count, 0)).toBe(2);
    });
  });
}
