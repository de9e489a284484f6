import { BASE_TIME as T, claimRequest, idsOf, newInstance, range, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * Fair claims: within a priority, a claim takes due instances across concurrency keys in turn (the
 * instances without a key being one more key), a key's running instances counting as turns it
 * already had, so one key's backlog never holds back another key's oldest due instance by more than
 * the claim it is due at, even when claims take one instance at a time; priority still comes first.
 */
export function fairClaimsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;

  describe('fair claims', () => {
    it("fair claims: a key's backlog never holds back another key's oldest due instance, nor the keyless ones", async () => {
      const s = testScope();
      for (const i of range(40))
        await suite.store.create(newInstance(s.id(`big-${i}`), s.workflow, { concurrencyKey: 'big', now: T + i }));
      await suite.store.create(newInstance(s.id('small'), s.workflow, { concurrencyKey: 'small', now: T + 100 }));
      await suite.store.create(newInstance(s.id('keyless'), s.workflow, { now: T + 101 }));
      const claimed = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 200, limit: 3 })));
      expect(claimed).toEqual([s.id('big-0'), s.id('keyless'), s.id('small')].sort());
      // The backlog then goes on in claim order.
      const next = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 200, limit: 2 })));
      expect(next).toEqual([s.id('big-1'), s.id('big-2')]);
    });

    it('fair claims: every key with due instances gets its oldest into the claim before any key gets another', async () => {
      const s = testScope();
      const keys = ['a', 'b', 'c', 'd'];
      for (const i of range(10))
        for (const key of keys)
          await suite.store.create(
            newInstance(s.id(`${key}-${i}`), s.workflow, { concurrencyKey: key, now: T + keys.indexOf(key) * 100 + i }),
          );
      const claimed = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 1_000, limit: 4 })));
      expect(claimed).toEqual(keys.map((key) => s.id(`${key}-0`)).sort());
      const claimed2 = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 1_000, limit: 4 })));
      expect(claimed2).toEqual(keys.map((key) => s.id(`${key}-1`)).sort());
    });

    it("fair claims: a key's running instances count as its turns, so a claim of one takes a newer key's instance before the busy key's next", async () => {
      const s = testScope();
      for (const i of range(10))
        await suite.store.create(newInstance(s.id(`big-${i}`), s.workflow, { concurrencyKey: 'big', now: T + i }));
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 100, limit: 2 })))).toEqual([
        s.id('big-0'),
        s.id('big-1'),
      ]);
      // Big has two running: the small key's newer instance goes first, then big's backlog again.
      await suite.store.create(newInstance(s.id('small'), s.workflow, { concurrencyKey: 'small', now: T + 200 }));
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 300, limit: 1 })))).toEqual([
        s.id('small'),
      ]);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 300, limit: 1 })))).toEqual([
        s.id('big-2'),
      ]);
      // A second small instance: small has one running, big two, so small's turn comes first again.
      await suite.store.create(newInstance(s.id('small-2'), s.workflow, { concurrencyKey: 'small', now: T + 400 }));
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 500, limit: 1 })))).toEqual([
        s.id('small-2'),
      ]);
    });

    it("fair claims: a key whose oldest due instance is leased takes its next turn with its next one, by that one's age", async () => {
      const s = testScope();
      // Key a's oldest is the oldest of all, and taken first; its next is younger than every other key's.
      await suite.store.create(newInstance(s.id('a-0'), s.workflow, { concurrencyKey: 'a', now: T }));
      await suite.store.create(newInstance(s.id('a-1'), s.workflow, { concurrencyKey: 'a', now: T + 50 }));
      const keys = 'bcdefghijkl'.split('');
      for (const [i, key] of keys.entries())
        await suite.store.create(newInstance(s.id(`${key}-0`), s.workflow, { concurrencyKey: key, now: T + 10 + i }));
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 100, limit: 1 })))).toEqual([
        s.id('a-0'),
      ]);
      // Twelve keys with due instances, a claim of 10: the ten oldest heads, a-1 not among them.
      const claimed = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 100, limit: 10 })));
      expect(claimed).toEqual(
        keys
          .slice(0, 10)
          .map((key) => s.id(`${key}-0`))
          .sort(),
      );
      const rest = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 100, limit: 10 })));
      expect(rest).toEqual([s.id('a-1'), s.id('l-0')].sort());
    });

    it('fair claims: priority still comes first; a better priority is taken whole before another key of a worse one', async () => {
      const s = testScope();
      for (const i of range(6))
        await suite.store.create(newInstance(s.id(`urgent-${i}`), s.workflow, { concurrencyKey: 'big', now: T + i }));
      await suite.store.create(
        newInstance(s.id('later'), s.workflow, { concurrencyKey: 'small', priority: 1, now: T + 100 }),
      );
      const claimed = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 200, limit: 4 })));
      expect(claimed).toEqual(range(4).map((i) => s.id(`urgent-${i}`)));
      const rest = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 200, limit: 4 })));
      expect(rest).toEqual([s.id('later'), s.id('urgent-4'), s.id('urgent-5')].sort());
    });

    it("fair claims: under concurrency.perKey, the claim fills the key's slots and takes the other key's instance too", async () => {
      const s = testScope();
      for (const i of range(30))
        await suite.store.create(newInstance(s.id(`big-${i}`), s.workflow, { concurrencyKey: 'big', now: T + i }));
      await suite.store.create(newInstance(s.id('small'), s.workflow, { concurrencyKey: 'small', now: T + 100 }));
      const limits = [{ workflow: s.workflow, limit: null, perKey: 2 }];
      const claimed = idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 200, limit: 5, limits })));
      expect(claimed).toEqual([s.id('big-0'), s.id('big-1'), s.id('small')].sort());
    });
  });
}
