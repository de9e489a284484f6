import { FINISHED_STATUSES } from '../../storage/workflow-instance.js';
import {
  BASE_TIME as T,
  claimRequest,
  details,
  idsOf,
  journalEntry,
  lease,
  newInstance,
  newSignal,
  pad,
  range,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `claim`: which due instances a claim leases, in what order, and the races between claims and lease holders. */
export function claimContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('claim', () => {
    it('claim: leases due instances: token, owner, leaseUntil, runs + 1, updatedAt = now, status running', async () => {
      const s = testScope();
      const { instance } = await suite.store.create(newInstance(s.id('a'), s.workflow));
      const request = claimRequest(s.workflow, { owner: 'worker-9', now: T + 100, leaseUntil: T + 30_100 });
      const claim = await suite.store.claim(request);
      const expected = {
        ...instance,
        status: 'running',
        runs: 1,
        leaseToken: request.token,
        leaseOwner: 'worker-9',
        leaseUntil: T + 30_100,
        updatedAt: T + 100,
      };
      expect(claim.instances).toEqual([expected]);
      expect(await suite.store.get(s.id('a'))).toEqual({ ...expected, waits: [] });
    });

    it('claim: takes the lowest priority first, then the oldest wakeAt, then createdAt, then id', async () => {
      const s = testScope();
      const order = ['p', 'w1', 'c1', 'c2', 'i-a', 'i-b', 'q'];
      const specs = {
        q: { priority: 2, wakeAt: T, now: T },
        'i-b': { wakeAt: T + 30, now: T + 7 },
        c2: { wakeAt: T + 20, now: T + 6 },
        p: { priority: -1, wakeAt: T + 50, now: T + 50 },
        'i-a': { wakeAt: T + 30, now: T + 7 },
        w1: { wakeAt: T + 10, now: T + 40 },
        c1: { wakeAt: T + 20, now: T + 5 },
      };
      for (const [name, spec] of Object.entries(specs))
        await suite.store.create(newInstance(s.id(name), s.workflow, spec));
      const taken: string[] = [];
      for (const _ of order) {
        const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 100, limit: 1 }));
        taken.push(...claim.instances.map((i) => i.id));
      }
      expect(taken).toEqual(order.map(s.id));
    });

    it('claim: a limit spanning priorities takes their due instances in priority order, past priorities where all sleep', async () => {
      const s = testScope();
      const specs: Record<string, { priority: number; wakeAt: number }> = {
        'sleeps-5': { priority: -5, wakeAt: T + 1_000 },
        'sleeps-5b': { priority: -5, wakeAt: T + 2_000 },
        'due-0a': { priority: 0, wakeAt: T + 50 },
        'sleeps-0': { priority: 0, wakeAt: T + 1_000 },
        'due-0b': { priority: 0, wakeAt: T + 60 },
        'sleeps-1': { priority: 1, wakeAt: T + 1_000 },
        'due-2b': { priority: 2, wakeAt: T + 20 },
        'due-2a': { priority: 2, wakeAt: T + 10 },
        'due-3': { priority: 3, wakeAt: T },
      };
      for (const [name, spec] of Object.entries(specs))
        await suite.store.create(newInstance(s.id(name), s.workflow, spec));
      await suite.store.create(newInstance(s.id('other-workflow'), `${s.workflow}-other`, { priority: -3, wakeAt: T }));
      const request = () => claimRequest(s.workflow, { now: T + 100, limit: 4 });
      expect(idsOf(await suite.store.claim(request()))).toEqual(
        ['due-0a', 'due-0b', 'due-2a', 'due-2b'].map(s.id).sort(),
      );
      expect(idsOf(await suite.store.claim(request()))).toEqual([s.id('due-3')]);
      expect(idsOf(await suite.store.claim(request()))).toEqual([]);
    });

    it('claim: takes only unfinished instances whose wakeAt is not null and <= now', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('suspended'), s.workflow), 'suspended', { wakeAt: null });
      for (const status of FINISHED_STATUSES) await settle(suite.store, newInstance(s.id(status), s.workflow), status);
      await suite.store.create(newInstance(s.id('due'), s.workflow, { wakeAt: T + 500 }));
      await suite.store.create(newInstance(s.id('later'), s.workflow, { wakeAt: T + 501 }));
      await settle(suite.store, newInstance(s.id('timer'), `${s.workflow}-t`), 'suspended', { wakeAt: T + 400 });
      const claim = await suite.store.claim(
        claimRequest(s.workflow, {
          now: T + 500,
          workflows: [
            { name: s.workflow, version: 1 },
            { name: `${s.workflow}-t`, version: 1 },
          ],
        }),
      );
      expect(idsOf(claim)).toEqual([s.id('due'), s.id('timer')].sort());
    });

    it('claim: takes only the listed workflow/version pairs', async () => {
      const s = testScope();
      for (const version of [1, 2, 3])
        await suite.store.create(newInstance(s.id(`v${version}`), s.workflow, { version }));
      await suite.store.create(newInstance(s.id('other'), `${s.workflow}-other`));
      const claim = await suite.store.claim(
        claimRequest(s.workflow, {
          workflows: [
            { name: s.workflow, version: 1 },
            { name: s.workflow, version: 3 },
          ],
        }),
      );
      expect(idsOf(claim)).toEqual([s.id('v1'), s.id('v3')]);
    });

    it('claim: passes over a live lease (leaseUntil >= now) and takes over a lapsed one', async () => {
      const s = testScope();
      await lease(suite.store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
      expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 1_000 }))).instances).toEqual([]);
      const request = claimRequest(s.workflow, { now: T + 1_001, owner: 'worker-2' });
      const claim = await suite.store.claim(request);
      expect(claim.instances).toHaveLength(1);
      expect(claim.instances[0]).toMatchObject({
        leaseToken: request.token,
        leaseOwner: 'worker-2',
        runs: 2,
        status: 'running',
      });
    });

    it('claim: a compensating instance keeps its status; pending, suspended and running ones become running', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('compensating'), s.workflow), 'compensating', { wakeAt: T + 10 });
      await settle(suite.store, newInstance(s.id('suspended'), s.workflow), 'suspended', { wakeAt: T + 10 });
      await lease(suite.store, newInstance(s.id('running'), s.workflow), { leaseUntil: T + 5 });
      await suite.store.create(newInstance(s.id('pending'), s.workflow));
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 10 }));
      const statuses = Object.fromEntries(claim.instances.map((i) => [i.id, [i.status, i.runs]]));
      expect(statuses).toEqual({
        [s.id('compensating')]: ['compensating', 2],
        [s.id('suspended')]: ['running', 2],
        [s.id('running')]: ['running', 2],
        [s.id('pending')]: ['running', 1],
      });
    });

    it('claim: returns the last signal id, read after the claim, as lastSignalId', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const sent = await suite.store.signal(newSignal(s.signal('n')));
      const claim = await suite.store.claim(claimRequest(s.workflow));
      expect(claim.lastSignalId).toBe(sent.id);
      const empty = await suite.store.claim(claimRequest(s.workflow));
      expect(empty).toEqual({ instances: [], lastSignalId: sent.id });
    });

    it('claim: takes at most limit instances per call', async () => {
      const s = testScope();
      for (const i of range(5)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow));
      const counts: number[] = [];
      for (const _ of range(4))
        counts.push((await suite.store.claim(claimRequest(s.workflow, { limit: 2 }))).instances.length);
      expect(counts).toEqual([2, 2, 1, 0]);
    });

    it('claim: of 8 concurrent claims (limit 5) over 30 due instances, none returns an instance another returned', async () => {
      const s = testScope();
      await Promise.all(range(30).map((i) => suite.store.create(newInstance(s.id(pad(i)), s.workflow))));
      const requests = range(8).map((i) => claimRequest(s.workflow, { owner: `worker-${i}`, limit: 5 }));
      const claims = await Promise.all(requests.map((request) => suite.store.claim(request)));
      for (const [n, claim] of claims.entries()) {
        for (const instance of claim.instances) {
          expect(await details(suite.store, instance.id)).toMatchObject({ leaseToken: requests[n]!.token, runs: 1 });
        }
      }
      // A claim may take fewer than fit (rows another claim held were skipped): a last claim sweeps up.
      const sweep = await suite.store.claim(claimRequest(s.workflow, { limit: 100 }));
      const ids = [...claims, sweep].flatMap((claim) => claim.instances.map((i) => i.id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(range(30).map((i) => s.id(pad(i))));
    });

    it('claim with ids (named by a notification): takes nothing a claim without them would not, and leases what it takes alike', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('due'), s.workflow, { wakeAt: T + 100 }));
      const { token: held } = await lease(suite.store, newInstance(s.id('leased'), s.workflow), {
        leaseUntil: T + 10_000,
      });
      await suite.store.create(newInstance(s.id('later'), s.workflow, { wakeAt: T + 101 }));
      await settle(suite.store, newInstance(s.id('done'), s.workflow), 'completed');
      await suite.store.create(newInstance(s.id('v2'), s.workflow, { version: 2 }));
      const leasedBefore = await suite.store.get(s.id('leased'));
      const named = ['leased', 'later', 'done', 'v2', 'missing', 'due'].map(s.id);
      const request = claimRequest(s.workflow, { now: T + 100, owner: 'worker-7', ids: named });
      const claim = await suite.store.claim(request);
      expect(idsOf(claim)).toEqual([s.id('due')]);
      expect(claim.instances[0]).toMatchObject({
        status: 'running',
        runs: 1,
        leaseToken: request.token,
        leaseOwner: 'worker-7',
        updatedAt: T + 100,
      });
      expect(await suite.store.get(s.id('leased'))).toEqual(leasedBefore);
      expect(await suite.store.renew(s.id('leased'), held, T + 20_000)).not.toBeNull();
      // A named instance of a workflow whose concurrency slot is taken stays where it is.
      const limited = `${s.workflow}-limited`;
      await lease(suite.store, newInstance(s.id('slot'), limited));
      await suite.store.create(newInstance(s.id('waits'), limited));
      const rules = { limits: [{ workflow: limited, limit: 1, perKey: null }] };
      const again = await suite.store.claim(claimRequest(limited, { now: T + 100, ids: [s.id('waits')], ...rules }));
      expect(again.instances).toEqual([]);
    });

    it('claim: taking over a lapsed lease fences the old holder: its write and renew change nothing', async () => {
      const s = testScope();
      const { token: old } = await lease(suite.store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
      await suite.store.claim(claimRequest(s.workflow, { now: T + 2_000 }));
      const before = await snapshot(suite.store, s.id('a'));
      expect(await suite.store.renew(s.id('a'), old, T + 50_000)).toBeNull();
      expect(
        await suite.store.write(s.id('a'), old, {
          now: T + 2_001,
          entries: [journalEntry('late')],
          status: 'completed',
        }),
      ).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
    });
  });
}
