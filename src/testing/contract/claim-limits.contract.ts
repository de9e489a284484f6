import {
  BASE_TIME as T,
  claimRequest,
  details,
  idsOf,
  lease,
  newInstance,
  pad,
  range,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** Claim limits: the concurrency slots and the rate windows a claim respects, alone and under concurrent claims. */
export function claimLimitsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('claim limits', () => {
    const concurrency = (workflow: string, limit: number | null, perKey: number | null) => ({
      limits: [{ workflow, limit, perKey }],
    });

    it('concurrency: at most limit instances of the workflow (every version) hold a live lease', async () => {
      const s = testScope();
      for (const i of range(3)) await suite.store.create(newInstance(s.id(`v1-${i}`), s.workflow, { now: T + i }));
      for (const i of range(2))
        await suite.store.create(newInstance(s.id(`v2-${i}`), s.workflow, { version: 2, now: T + 10 + i }));
      const workflows = [
        { name: s.workflow, version: 1 },
        { name: s.workflow, version: 2 },
      ];
      const rules = concurrency(s.workflow, 2, null);
      const v2only = [{ name: s.workflow, version: 2 }];
      const now = T + 100;
      expect(
        (await suite.store.claim(claimRequest(s.workflow, { now, workflows: v2only, ...rules }))).instances,
      ).toHaveLength(2);
      expect((await suite.store.claim(claimRequest(s.workflow, { now, workflows, ...rules }))).instances).toEqual([]);
    });

    it('concurrency: a lapsed lease holds no slot, and a released instance frees its slot', async () => {
      const s = testScope();
      for (const i of range(5)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
      const rules = concurrency(s.workflow, 2, null);
      const first = claimRequest(s.workflow, { now: T + 10, leaseUntil: T + 1_000, ...rules });
      const claimed = (await suite.store.claim(first)).instances;
      expect(claimed.map((i) => i.id).sort()).toEqual([s.id('i0'), s.id('i1')]);
      expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 20, ...rules }))).instances).toEqual([]);
      await suite.store.write(s.id('i0'), first.token, {
        now: T + 30,
        entries: [],
        status: 'completed',
        release: { wakeAt: null, waits: [], signalCursor: 0 },
      });
      const next = await suite.store.claim(claimRequest(s.workflow, { now: T + 40, leaseUntil: T + 1_000, ...rules }));
      expect(next.instances.map((i) => i.id)).toEqual([s.id('i2')]);
      // At T + 1001 every lease has lapsed: two slots are free again.
      const later = await suite.store.claim(claimRequest(s.workflow, { now: T + 1_001, ...rules }));
      expect(later.instances).toHaveLength(2);
    });

    it("concurrency: only the workflow's own live leases take its slots; another workflow's leases, even with the same concurrency key, take none", async () => {
      const s = testScope();
      const other = `${s.workflow}-other`;
      await lease(suite.store, newInstance(s.id('o1'), other, { concurrencyKey: 'k' }));
      await lease(suite.store, newInstance(s.id('o2'), other, { concurrencyKey: 'k' }));
      await suite.store.create(newInstance(s.id('a'), s.workflow, { concurrencyKey: 'k', now: T + 1 }));
      await suite.store.create(newInstance(s.id('b'), s.workflow, { now: T + 2 }));
      const claim = await suite.store.claim(
        claimRequest(s.workflow, {
          now: T + 10,
          workflows: [
            { name: s.workflow, version: 1 },
            { name: other, version: 1 },
          ],
          limits: [
            { workflow: s.workflow, limit: 2, perKey: 1 },
            { workflow: other, limit: 2, perKey: 1 },
          ],
        }),
      );
      expect(idsOf(claim)).toEqual(['a', 'b'].map(s.id));
    });

    it('concurrency: a lease holds its slot up to and including leaseUntil', async () => {
      const s = testScope();
      await lease(suite.store, newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'k' }), {
        leaseUntil: T + 1_000,
      });
      await suite.store.create(newInstance(s.id('next'), s.workflow, { concurrencyKey: 'k', now: T + 1 }));
      for (const rules of [concurrency(s.workflow, 1, null), concurrency(s.workflow, null, 1)]) {
        expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 1_000, ...rules }))).instances).toEqual([]);
      }
      // One tick later the lease has lapsed: its slot is free, and one of the two (the holder, due first) is taken.
      const after = await suite.store.claim(
        claimRequest(s.workflow, { now: T + 1_001, ...concurrency(s.workflow, 1, 1) }),
      );
      expect(after.instances.map((i) => i.id)).toEqual([s.id('holder')]);
    });

    it("concurrency: a claim that counts a lapsed lease's slot as free ends that lease, so its holder can't renew it into a second running instance", async () => {
      const s = testScope();
      for (const rules of [concurrency(s.workflow, 1, null), concurrency(s.workflow, null, 1)]) {
        const round = s.id(`${rules.limits[0]!.limit === null ? 'key' : 'limit'}`);
        // The holder has a lower priority than the instance behind it: a claim of one takes that one, not the holder.
        const holder = newInstance(`${round}-holder`, s.workflow, { concurrencyKey: 'k', priority: 5 });
        const { token } = await lease(suite.store, holder, { leaseUntil: T + 1_000, ...rules });
        await suite.store.create(newInstance(`${round}-next`, s.workflow, { concurrencyKey: 'k', now: T + 1 }));
        const next = claimRequest(s.workflow, { now: T + 1_001, limit: 1, leaseUntil: T + 60_000, ...rules });
        expect((await suite.store.claim(next)).instances.map((i) => i.id)).toEqual([`${round}-next`]);
        // Renewed (or written to), the lapsed lease would hold a slot beside the new one: two at once where one may run.
        expect(await suite.store.renew(holder.id, token, T + 60_000)).toBeNull();
        expect(await suite.store.write(holder.id, token, { now: T + 1_002, entries: [] })).toBe(false);
        expect((await details(suite.store, holder.id)).leaseToken).toBeNull();
        // Nothing leaks: once the slot is free again, the holder is claimed and runs on.
        await suite.store.write(`${round}-next`, next.token, {
          now: T + 1_003,
          entries: [],
          status: 'completed',
          release: { wakeAt: null, waits: [], signalCursor: 0 },
        });
        const after = await suite.store.claim(claimRequest(s.workflow, { now: T + 1_004, ...rules }));
        expect(after.instances.map((i) => i.id)).toEqual([holder.id]);
        await suite.store.write(holder.id, after.instances[0]!.leaseToken!, {
          now: T + 1_005,
          entries: [],
          status: 'completed',
          release: { wakeAt: null, waits: [], signalCursor: 0 },
        });
      }
    });

    it('concurrency: at most perKey per concurrencyKey; instances without a key count only toward limit', async () => {
      const s = testScope();
      const keys = ['k1', 'k1', 'k2', 'k2', null, null, null];
      for (const [i, key] of keys.entries()) {
        await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { concurrencyKey: key, now: T + i }));
      }
      const now = T + 100;
      const claim = await suite.store.claim(claimRequest(s.workflow, { now, ...concurrency(s.workflow, 4, 1) }));
      expect(idsOf(claim)).toEqual(['i0', 'i2', 'i4', 'i5'].map(s.id));
      const perKeyOnly = await suite.store.claim(
        claimRequest(s.workflow, { now, ...concurrency(s.workflow, null, 1) }),
      );
      expect(perKeyOnly.instances.map((i) => i.id)).toEqual([s.id('i6')]);
    });

    it('concurrency: one busy concurrency key never holds back the candidates behind it', async () => {
      const s = testScope();
      await lease(suite.store, newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'busy' }));
      await suite.store.create(newInstance(s.id('b1'), s.workflow, { concurrencyKey: 'busy', priority: -5 }));
      await suite.store.create(newInstance(s.id('b2'), s.workflow, { concurrencyKey: 'busy', priority: -5 }));
      await suite.store.create(newInstance(s.id('free'), s.workflow, { concurrencyKey: 'free', now: T + 100 }));
      const claim = await suite.store.claim(
        claimRequest(s.workflow, { now: T + 100, limit: 1, ...concurrency(s.workflow, null, 1) }),
      );
      expect(claim.instances.map((i) => i.id)).toEqual([s.id('free')]);
    });

    it('concurrency: a workflow without limits in the request is not limited', async () => {
      const s = testScope();
      const other = `${s.workflow}-free`;
      for (const i of range(3)) await suite.store.create(newInstance(s.id(`l${i}`), s.workflow));
      for (const i of range(3)) await suite.store.create(newInstance(s.id(`f${i}`), other));
      const claim = await suite.store.claim(
        claimRequest(s.workflow, {
          workflows: [
            { name: s.workflow, version: 1 },
            { name: other, version: 1 },
          ],
          ...concurrency(s.workflow, 1, null),
        }),
      );
      expect(claim.instances.filter((i) => i.workflow === s.workflow)).toHaveLength(1);
      expect(claim.instances.filter((i) => i.workflow === other)).toHaveLength(3);
    });

    it('concurrency: concurrent claims never exceed limit or perKey', async () => {
      const s = testScope();
      const keyed = `${s.workflow}-keyed`;
      await Promise.all(range(20).map((i) => suite.store.create(newInstance(s.id(`l${pad(i)}`), s.workflow))));
      await Promise.all(
        range(16).map((i) =>
          suite.store.create(newInstance(s.id(`k${pad(i)}`), keyed, { concurrencyKey: `key-${i % 4}` })),
        ),
      );
      const limitedClaim = () =>
        suite.store.claim(claimRequest(s.workflow, { limit: 5, ...concurrency(s.workflow, 3, null) }));
      const limited = (await Promise.all(range(8).map(limitedClaim))).flatMap((c) => c.instances);
      expect(limited.length).toBeLessThanOrEqual(3);
      // A claim may take fewer than fit; what's left of the room, a last claim takes, and no more.
      expect([...limited, ...(await limitedClaim()).instances]).toHaveLength(3);
      const keyedClaim = () => suite.store.claim(claimRequest(keyed, { limit: 5, ...concurrency(keyed, null, 1) }));
      const perKey = (await Promise.all(range(8).map(keyedClaim))).flatMap((c) => c.instances);
      const keys = [...perKey, ...(await keyedClaim()).instances].map((i) => i.concurrencyKey);
      expect(keys.sort()).toEqual(['key-0', 'key-1', 'key-2', 'key-3']);
    });

    it('concurrency: an instance with terminate requested is claimed whatever the slots hold, and takes no slot; a cancel waits for one', async () => {
      const s = testScope();
      const terminate = (id: string) => suite.store.requestCancel(id, { reason: 'stop', now: T + 5, terminate: true });
      for (const [round, limit, perKey] of [
        ['limit', 1, null],
        ['key', null, 1],
      ] as const) {
        const workflow = `${s.workflow}-${round}`;
        const rules = concurrency(workflow, limit, perKey);
        await lease(suite.store, newInstance(`${workflow}-holder`, workflow, { concurrencyKey: 'k' }), {
          leaseUntil: T + 60_000,
          ...rules,
        });
        await suite.store.create(newInstance(`${workflow}-doomed`, workflow, { concurrencyKey: 'k', now: T + 1 }));
        await suite.store.create(newInstance(`${workflow}-cancelled`, workflow, { concurrencyKey: 'k', now: T + 2 }));
        await suite.store.create(newInstance(`${workflow}-next`, workflow, { concurrencyKey: 'k', now: T + 3 }));
        expect(await terminate(`${workflow}-doomed`)).toBe(true);
        // A cancel runs compensations, which are the workflow's code: it waits for a slot like any execution.
        expect(
          await suite.store.requestCancel(`${workflow}-cancelled`, { reason: 'stop', now: T + 5, terminate: false }),
        ).toBe(true);
        const claim = await suite.store.claim(claimRequest(workflow, { now: T + 10, ...rules }));
        expect(claim.instances.map((i) => [i.id, i.terminateRequested])).toEqual([[`${workflow}-doomed`, true]]);
      }
      // With room for one more: the terminated instance leaves it to the instance behind it.
      const rules = concurrency(s.workflow, 2, 2);
      await lease(suite.store, newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'k' }), {
        leaseUntil: T + 60_000,
        ...rules,
      });
      await suite.store.create(newInstance(s.id('doomed'), s.workflow, { concurrencyKey: 'k', now: T + 1 }));
      await suite.store.create(newInstance(s.id('next'), s.workflow, { concurrencyKey: 'k', now: T + 2 }));
      await terminate(s.id('doomed'));
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 10, ...rules }));
      expect(idsOf(claim)).toEqual(['doomed', 'next'].map(s.id));
    });

    it("concurrency: a live lease holds its slot after a terminate too (the execution may still be in the workflow's code until it notices)", async () => {
      const s = testScope();
      const rules = concurrency(s.workflow, null, 1);
      await lease(suite.store, newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'k' }), {
        leaseUntil: T + 60_000,
        ...rules,
      });
      await suite.store.create(newInstance(s.id('next'), s.workflow, { concurrencyKey: 'k', now: T + 1 }));
      expect(await suite.store.requestCancel(s.id('holder'), { reason: 'stop', now: T + 5, terminate: true })).toBe(
        true,
      );
      expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 10, ...rules }))).instances).toEqual([]);
    });

    const rate = (workflow: string, limit: { max: number; duration: number } | null, perKey: typeof limit = null) => ({
      rateLimits: [{ workflow, limit, perKey }],
    });

    it('rate: a window holds at most max claims; it opens at the first claim and ends duration later', async () => {
      const s = testScope();
      for (const i of range(7)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
      const rules = rate(s.workflow, { max: 2, duration: 1_000 });
      const count = async (now: number) =>
        (await suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules }))).instances
          .length;
      expect(await count(T + 10)).toBe(2);
      expect(await count(T + 500)).toBe(0);
      expect(await count(T + 1_009)).toBe(0);
      expect(await count(T + 1_010)).toBe(2);
      expect(await count(T + 1_500)).toBe(0);
      expect(await count(T + 3_000)).toBe(2);
    });

    it('rate: after an idle gap longer than the window, the next window starts at the first claim after the gap', async () => {
      const s = testScope();
      for (const i of range(8)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
      const rules = rate(s.workflow, { max: 2, duration: 1_000 }, { max: 2, duration: 1_000 });
      const count = async (now: number) =>
        (await suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules }))).instances
          .length;
      expect(await count(T + 10)).toBe(2);
      // Idle until T + 2500: the window [T + 10, T + 1010) ended long ago, the next one opens here.
      expect(await count(T + 2_500)).toBe(2);
      // A window kept on the first one's grid would have reopened at T + 3010.
      expect(await count(T + 3_010)).toBe(0);
      expect(await count(T + 3_499)).toBe(0);
      expect(await count(T + 3_500)).toBe(2);
    });

    it('rate: a key window after an idle gap also starts at the first claim after the gap', async () => {
      const s = testScope();
      for (const i of range(4))
        await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { rateLimitKey: 'k', now: T + i }));
      const rules = rate(s.workflow, null, { max: 1, duration: 1_000 });
      const count = async (now: number) =>
        (await suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules }))).instances
          .length;
      expect(await count(T + 10)).toBe(1);
      expect(await count(T + 2_500)).toBe(1);
      expect(await count(T + 3_010)).toBe(0);
      expect(await count(T + 3_500)).toBe(1);
    });

    it('rate: claims of one window add up across claims', async () => {
      const s = testScope();
      for (const i of range(6)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
      const rules = rate(s.workflow, { max: 3, duration: 1_000 });
      const counts: number[] = [];
      for (const at of [10, 20, 30]) {
        counts.push(
          (await suite.store.claim(claimRequest(s.workflow, { now: T + at, limit: 2, ...rules }))).instances.length,
        );
      }
      expect(counts).toEqual([2, 1, 0]);
    });

    it('rate: perKey windows limit each rateLimitKey, keyless instances count only toward the workflow, and a busy key holds back no other', async () => {
      const s = testScope();
      const keys = ['a', 'a', 'a', 'b', null, null];
      for (const [i, key] of keys.entries()) {
        await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { rateLimitKey: key, now: T + i }));
      }
      const rules = rate(s.workflow, null, { max: 1, duration: 1_000 });
      const ids = async (now: number) =>
        idsOf(await suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules })));
      expect(await ids(T + 10)).toEqual(['i0', 'i3', 'i4', 'i5'].map(s.id));
      expect(await ids(T + 20)).toEqual([]);
      expect(await ids(T + 1_010)).toEqual([s.id('i1')]);
    });

    it('rate: the workflow window and the key windows apply together', async () => {
      const s = testScope();
      const keys = ['a', 'a', 'b', 'c', 'd'];
      for (const [i, key] of keys.entries()) {
        await suite.store.create(newInstance(s.id(`i${i}`), s.workflow, { rateLimitKey: key, now: T + i }));
      }
      const rules = rate(s.workflow, { max: 3, duration: 1_000 }, { max: 1, duration: 1_000 });
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 10, ...rules }));
      expect(idsOf(claim)).toEqual(['i0', 'i2', 'i3'].map(s.id));
    });

    it('rate: concurrent claims never put more than max claims in a window', async () => {
      const s = testScope();
      const keyed = `${s.workflow}-keyed`;
      await Promise.all(range(20).map((i) => suite.store.create(newInstance(s.id(`w${pad(i)}`), s.workflow))));
      await Promise.all(
        range(15).map((i) =>
          suite.store.create(newInstance(s.id(`k${pad(i)}`), keyed, { rateLimitKey: `key-${i % 3}` })),
        ),
      );
      const ownClaim = () =>
        suite.store.claim(claimRequest(s.workflow, { limit: 3, ...rate(s.workflow, { max: 4, duration: 60_000 }) }));
      const own = (await Promise.all(range(8).map(ownClaim))).flatMap((c) => c.instances);
      expect(own.length).toBeLessThanOrEqual(4);
      // A claim may take fewer than fit; what's left of the window, a last claim takes, and no more.
      expect([...own, ...(await ownClaim()).instances]).toHaveLength(4);
      const keyedClaim = () =>
        suite.store.claim(claimRequest(keyed, { limit: 3, ...rate(keyed, null, { max: 2, duration: 60_000 }) }));
      const perKey = (await Promise.all(range(8).map(keyedClaim))).flatMap((c) => c.instances);
      const keys = [...perKey, ...(await keyedClaim()).instances].map((i) => i.rateLimitKey!);
      expect(keys.sort()).toEqual(['key-0', 'key-0', 'key-1', 'key-1', 'key-2', 'key-2']);
    });

    it('rate: an instance with terminate requested is claimed whatever its windows hold, and takes no room in them', async () => {
      const s = testScope();
      const rules = rate(s.workflow, { max: 3, duration: 60_000 }, { max: 2, duration: 60_000 });
      const ids = async (now: number) => idsOf(await suite.store.claim(claimRequest(s.workflow, { now, ...rules })));
      await suite.store.create(newInstance(s.id('first'), s.workflow, { rateLimitKey: 'k' }));
      expect(await ids(T + 10)).toEqual([s.id('first')]);
      // One claim left in the key's window: the terminated instance, first in claim order, leaves it to `next`.
      for (const [i, name] of ['doomed', 'next', 'after'].entries()) {
        await suite.store.create(newInstance(s.id(name), s.workflow, { rateLimitKey: 'k', now: T + 11 + i }));
      }
      await suite.store.requestCancel(s.id('doomed'), { reason: 'stop', now: T + 15, terminate: true });
      expect(await ids(T + 20)).toEqual(['doomed', 'next'].map(s.id));
      // The key's window is full; the workflow's holds one more. A terminated instance still passes.
      await suite.store.create(newInstance(s.id('late'), s.workflow, { rateLimitKey: 'k', now: T + 21 }));
      await suite.store.requestCancel(s.id('late'), { reason: 'stop', now: T + 22, terminate: true });
      expect(await ids(T + 30)).toEqual([s.id('late')]);
      // Two claims counted in the workflow's window: another key still has room in it.
      await suite.store.create(newInstance(s.id('other'), s.workflow, { rateLimitKey: 'o', now: T + 31 }));
      expect(await ids(T + 40)).toEqual([s.id('other')]);
      expect(await ids(T + 50)).toEqual([]);
    });

    it("rate: a claim of instances that count toward no window (another workflow's, or without a rateLimitKey under a per-key rule) takes them", async () => {
      const s = testScope();
      const other = `${s.workflow}-unlimited`;
      const rules = rate(s.workflow, null, { max: 1, duration: 60_000 });
      const workflows = [
        { name: s.workflow, version: 1 },
        { name: other, version: 1 },
      ];
      const ids = async (now: number, limit: number) =>
        idsOf(await suite.store.claim(claimRequest(s.workflow, { now, limit, workflows, ...rules })));
      await suite.store.create(newInstance(s.id('other'), other));
      await suite.store.create(newInstance(s.id('keyless'), s.workflow, { now: T + 1 }));
      await suite.store.create(newInstance(s.id('keyed'), s.workflow, { rateLimitKey: 'k', now: T + 2 }));
      expect(await ids(T + 10, 1)).toEqual([s.id('other')]);
      expect(await ids(T + 20, 1)).toEqual([s.id('keyless')]);
      expect(await ids(T + 30, 10)).toEqual([s.id('keyed')]);
    });
  });
}
