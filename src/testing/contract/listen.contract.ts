import type { WorkflowLeaseFlags } from '../../storage/workflow-store.js';
import { BASE_TIME as T, lease, newInstance, settle, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** How long a store gets to name its first cancel before the suite takes it for one that names none. */
const FIRST_NOTICE_WAIT = 1_000;

async function waitFor(done: () => boolean, timeout: number): Promise<boolean> {
  for (let waited = 0; !done() && waited < timeout; waited += 10)
    await new Promise((resolve) => setTimeout(resolve, 10));
  return done();
}

/**
 * `listen` (optional), for a store that names cancels (`'cancel'`, see `WorkflowWakeUpKind`): it
 * names each one, once stored, so a worker renewing the lease as it hears it reads the flag; a
 * store that can only name those of the instances the listener holds (`held`) names those, also
 * while the listener needs no wake-ups.
 */
export function listenContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('listen', () => {
    it("listen: a cancel or terminate it names ('cancel') is named once stored, so a renewal made on hearing it reads the flag", async () => {
      const store = suite.store;
      if (!store.listen) return; // optional: workers then find work (and requests) by polling and heartbeats
      const s = testScope();
      const leases = new Map<string, string>();
      for (const name of ['cancelled', 'terminated'])
        leases.set(s.id(name), (await lease(store, newInstance(s.id(name), `${s.workflow}-${name}`))).token);
      await settle(store, newInstance(s.id('suspended'), `${s.workflow}-suspended`), 'suspended', { wakeAt: null });
      const named = new Set<string>();
      const renewals: Array<Promise<[string, WorkflowLeaseFlags | null]>> = [];
      const stop = await store.listen((id, kind) => {
        if (kind !== 'cancel' || id === undefined || !id.startsWith(s.prefix)) return;
        named.add(id);
        const token = leases.get(id);
        if (token !== undefined) renewals.push(store.renew(id, token, T + 60_000).then((flags) => [id, flags]));
      });
      try {
        expect(await store.requestCancel(s.id('cancelled'), { reason: 'c', now: T + 10, terminate: false })).toBe(true);
        expect(await store.requestCancel(s.id('terminated'), { reason: 't', now: T + 10, terminate: true })).toBe(true);
        expect(await store.requestCancel(s.id('suspended'), { reason: 's', now: T + 10, terminate: false })).toBe(true);
        if (!(await waitFor(() => named.size > 0, FIRST_NOTICE_WAIT))) return; // a store that names no cancel
        await waitFor(() => named.size === 3, 10_000);
        expect([...named].sort()).toEqual([s.id('cancelled'), s.id('suspended'), s.id('terminated')]);
        const flags = new Map(await Promise.all(renewals));
        expect(flags.get(s.id('cancelled'))).toEqual({ cancelRequested: true, terminateRequested: false });
        expect(flags.get(s.id('terminated'))).toEqual({ cancelRequested: true, terminateRequested: true });
      } finally {
        await stop();
      }
    });

    it("listen: with `held`, a cancel or terminate of a held instance is named ('cancel') once stored, also while the listener needs no wake-ups", async () => {
      const store = suite.store;
      if (!store.listen) return;
      const s = testScope();
      const leases = new Map<string, string>();
      for (const name of ['cancelled', 'terminated', 'untouched'])
        leases.set(s.id(name), (await lease(store, newInstance(s.id(name), `${s.workflow}-${name}`))).token);
      const named: string[] = [];
      const renewals: Array<Promise<[string, WorkflowLeaseFlags | null]>> = [];
      // A busy worker: it claims on its own (no wake-ups needed) and holds the three leases.
      const stop = await store.listen(
        (id, kind) => {
          if (kind !== 'cancel' || id === undefined || !id.startsWith(s.prefix)) return;
          named.push(id);
          renewals.push(store.renew(id, leases.get(id)!, T + 60_000).then((flags) => [id, flags]));
        },
        { needsWakeUps: () => false, held: () => leases.keys() },
      );
      try {
        expect(await store.requestCancel(s.id('cancelled'), { reason: 'c', now: T + 10, terminate: false })).toBe(true);
        expect(await store.requestCancel(s.id('terminated'), { reason: 't', now: T + 10, terminate: true })).toBe(true);
        if (!(await waitFor(() => named.length > 0, FIRST_NOTICE_WAIT))) return; // a store that names no cancel
        await waitFor(() => named.length >= 2, 10_000);
        expect([...new Set(named)].sort()).toEqual([s.id('cancelled'), s.id('terminated')]);
        const flags = new Map(await Promise.all(renewals));
        expect(flags.get(s.id('cancelled'))).toEqual({ cancelRequested: true, terminateRequested: false });
        expect(flags.get(s.id('terminated'))).toEqual({ cancelRequested: true, terminateRequested: true });
      } finally {
        await stop();
      }
    });
  });
}
