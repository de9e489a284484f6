import { BASE_TIME as T, lease, newInstance, settle, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `countDue` (optional): what a claim could take now, counted up to a cap. */
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
  });
}
