import { randomUUID } from 'node:crypto';
import { BASE_TIME as T, claimRequest, details, lease, newInstance, snapshot, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `renew`: a lease is extended only by its holder, and reports a requested cancel or terminate. */
export function renewContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('renew', () => {
    it('renew: with the lease token extends leaseUntil and returns the flags, changing nothing else', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const before = await details(suite.store, s.id('a'));
      expect(await suite.store.renew(s.id('a'), token, T + 90_000)).toEqual({
        cancelRequested: false,
        terminateRequested: false,
      });
      expect(await details(suite.store, s.id('a'))).toEqual({ ...before, leaseUntil: T + 90_000 });
    });

    it('renew: a lapsed lease still renews while nobody claimed the instance since', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
      expect(await suite.store.renew(s.id('a'), token, T + 90_000)).not.toBeNull();
      expect((await details(suite.store, s.id('a'))).leaseUntil).toBe(T + 90_000);
      expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 5_000 }))).instances).toEqual([]);
    });

    it('renew: a stale token, a released lease or an unknown id returns null and changes nothing', async () => {
      const s = testScope();
      const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const before = await snapshot(suite.store, s.id('a'));
      expect(await suite.store.renew(s.id('a'), randomUUID(), T + 90_000)).toBeNull();
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      await suite.store.write(s.id('a'), token, {
        now: T + 1,
        entries: [],
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
      const released = await snapshot(suite.store, s.id('a'));
      expect(await suite.store.renew(s.id('a'), token, T + 90_000)).toBeNull();
      expect(await snapshot(suite.store, s.id('a'))).toEqual(released);
      expect(await suite.store.renew(s.id('missing'), token, T + 90_000)).toBeNull();
    });

    it('renew: returns cancelRequested and terminateRequested as requested', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      await suite.store.requestCancel(s.id('a'), { reason: null, now: T + 1, terminate: false });
      expect(await suite.store.renew(s.id('a'), token, T + 60_000)).toEqual({
        cancelRequested: true,
        terminateRequested: false,
      });
      await suite.store.requestCancel(s.id('a'), { reason: null, now: T + 2, terminate: true });
      expect(await suite.store.renew(s.id('a'), token, T + 60_000)).toEqual({
        cancelRequested: true,
        terminateRequested: true,
      });
    });
  });
}
