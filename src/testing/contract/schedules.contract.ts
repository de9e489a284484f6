import { randomUUID } from 'node:crypto';
import type { WorkflowScheduleSave } from '../../storage/workflow-store.js';
import { BASE_TIME as T, pad, range, scheduleSave, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** Schedules: saving with a revision check, leasing due schedules, deleting. */
export function schedulesContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('schedules', () => {
    it('saveSchedule: expectRevision null inserts at revision 1 with createdAt = updatedAt = now and no lease', async () => {
      const s = testScope();
      const saved = await suite.store.saveSchedule(
        scheduleSave(s.id('daily'), s.workflow, { declared: true, paused: true }),
      );
      const expected = {
        id: s.id('daily'),
        workflow: s.workflow,
        declared: true,
        spec: { every: 60_000 },
        input: { from: s.id('daily') },
        paused: true,
        wakeAt: T,
        state: { last: null },
        revision: 1,
        leaseToken: null,
        leaseOwner: null,
        leaseUntil: null,
        createdAt: T,
        updatedAt: T,
      };
      expect(saved).toEqual(expected);
      expect(await suite.store.getSchedule(s.id('daily'))).toEqual(expected);
    });

    it('saveSchedule: expectRevision null refuses, changing nothing, when the id exists', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const before = await suite.store.getSchedule(s.id('a'));
      expect(
        await suite.store.saveSchedule(
          scheduleSave(s.id('a'), s.workflow, { spec: { cron: '* * * * *' }, now: T + 5 }),
        ),
      ).toBeNull();
      expect(await suite.store.getSchedule(s.id('a'))).toEqual(before);
    });

    it('saveSchedule: a revision replaces the schedule still at it (revision + 1, createdAt kept), else changes nothing', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const replace = scheduleSave(s.id('a'), `${s.workflow}-2`, {
        declared: true,
        spec: { cron: '0 * * * *' },
        input: null,
        paused: true,
        wakeAt: null,
        state: { last: 1 },
        expectRevision: 1,
        now: T + 10,
      });
      const saved = await suite.store.saveSchedule(replace);
      expect(saved).toMatchObject({
        workflow: `${s.workflow}-2`,
        declared: true,
        spec: { cron: '0 * * * *' },
        input: null,
        paused: true,
        wakeAt: null,
        state: { last: 1 },
        revision: 2,
        createdAt: T,
        updatedAt: T + 10,
      });
      expect(await suite.store.saveSchedule({ ...replace, spec: { cron: 'stale' }, now: T + 20 })).toBeNull();
      expect(await suite.store.getSchedule(s.id('a'))).toEqual(saved);
      expect(await suite.store.saveSchedule({ ...replace, id: s.id('missing') })).toBeNull();
      expect(await suite.store.getSchedule(s.id('missing'))).toBeNull();
    });

    it('saveSchedule: releaseLease clears the lease so its holder can no longer writeSchedule; without it the lease stays', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const claim = {
        owner: 'worker-1',
        token: randomUUID(),
        now: T,
        leaseUntil: T + 30_000,
        limit: 10,
        workflows: [s.workflow],
      };
      expect(await suite.store.claimSchedules(claim)).toHaveLength(1);
      const kept = await suite.store.saveSchedule(
        scheduleSave(s.id('a'), s.workflow, { expectRevision: 1, now: T + 1 }),
      );
      expect(kept).toMatchObject({ leaseToken: claim.token, leaseUntil: T + 30_000, revision: 2 });
      const released = await suite.store.saveSchedule(
        scheduleSave(s.id('a'), s.workflow, { expectRevision: 2, releaseLease: true, now: T + 2 }),
      );
      expect(released).toMatchObject({ leaseToken: null, leaseUntil: null, revision: 3 });
      expect(
        await suite.store.writeSchedule(s.id('a'), claim.token, {
          now: T + 3,
          state: { x: 1 },
          wakeAt: T + 60_000,
          release: true,
        }),
      ).toBe(false);
      expect(await suite.store.getSchedule(s.id('a'))).toEqual(released);
    });

    it('saveSchedule: of concurrent saves expecting one revision exactly one lands', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const results = await Promise.all(
        range(10).map((i) =>
          suite.store.saveSchedule(
            scheduleSave(s.id('a'), s.workflow, { expectRevision: 1, state: { i }, now: T + i }),
          ),
        ),
      );
      const landed = results.filter((r) => r !== null);
      expect(landed).toHaveLength(1);
      expect(await suite.store.getSchedule(s.id('a'))).toEqual(landed[0]);
      const inserts = await Promise.all(
        range(10).map(() => suite.store.saveSchedule(scheduleSave(s.id('b'), s.workflow))),
      );
      expect(inserts.filter((r) => r !== null)).toHaveLength(1);
    });

    it('getSchedule and listSchedules: null for an unknown id; filter by workflow and declared, order by id, page', async () => {
      const s = testScope();
      expect(await suite.store.getSchedule(s.id('missing'))).toBeNull();
      for (const [name, declared, workflow] of [
        ['d', true, s.workflow],
        ['b', false, s.workflow],
        ['a', true, s.workflow],
        ['c', false, s.workflow],
        ['e', true, `${s.workflow}-2`],
      ] as const) {
        await suite.store.saveSchedule(scheduleSave(s.id(name), workflow, { declared }));
      }
      const ids = async (query: { workflow?: string; declared?: boolean; limit?: number; offset?: number }) =>
        (await suite.store.listSchedules({ limit: 100, offset: 0, ...query })).map((r) =>
          r.id.slice(s.prefix.length + 1),
        );
      expect(await ids({ workflow: s.workflow })).toEqual(['a', 'b', 'c', 'd']);
      expect(await ids({ workflow: s.workflow, declared: true })).toEqual(['a', 'd']);
      expect(await ids({ workflow: s.workflow, declared: false })).toEqual(['b', 'c']);
      expect(await ids({ workflow: s.workflow, limit: 2, offset: 1 })).toEqual(['b', 'c']);
      expect(await ids({ workflow: `${s.workflow}-2` })).toEqual(['e']);
      const listed = await suite.store.listSchedules({ workflow: `${s.workflow}-2`, limit: 1, offset: 0 });
      expect(listed).toEqual([await suite.store.getSchedule(s.id('e'))]);
    });

    it('listSchedules with after: the page starts past that id, so a schedule deleted behind the position skips none', async () => {
      const s = testScope();
      for (const name of ['a', 'b', 'c', 'd']) await suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow));
      const page = async (after: string) =>
        (await suite.store.listSchedules({ workflow: s.workflow, after: s.id(after), limit: 2, offset: 0 })).map((r) =>
          r.id.slice(s.prefix.length + 1),
        );
      expect(await page('a')).toEqual(['b', 'c']);
      // A reader that has done a and b: a is deleted meanwhile (an offset of 2 would now start at d).
      expect(await suite.store.deleteSchedule(s.id('a'))).toBe(true);
      expect(await page('b')).toEqual(['c', 'd']);
      expect(await page('d')).toEqual([]);
      // A position need not be a stored id.
      expect(await page('bb')).toEqual(['c', 'd']);
    });

    it('deleteSchedule: deletes it, or only at the given revision; refuses an unknown id or another revision', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      await suite.store.saveSchedule(scheduleSave(s.id('b'), s.workflow));
      await suite.store.saveSchedule(scheduleSave(s.id('b'), s.workflow, { expectRevision: 1 }));
      expect(await suite.store.deleteSchedule(s.id('a'))).toBe(true);
      expect(await suite.store.getSchedule(s.id('a'))).toBeNull();
      expect(await suite.store.deleteSchedule(s.id('a'))).toBe(false);
      expect(await suite.store.deleteSchedule(s.id('b'), 1)).toBe(false);
      expect(await suite.store.getSchedule(s.id('b'))).not.toBeNull();
      expect(await suite.store.deleteSchedule(s.id('b'), 2)).toBe(true);
      expect(await suite.store.getSchedule(s.id('b'))).toBeNull();
    });

    it('claimSchedules: leases due schedules (not paused, wakeAt <= now, listed workflow), most overdue first, up to limit, changing only the lease', async () => {
      const s = testScope();
      const other = `${s.workflow}-other`;
      const specs: Array<[string, Partial<WorkflowScheduleSave>]> = [
        ['late', { wakeAt: T + 30 }],
        ['b-tie', { wakeAt: T + 10 }],
        ['a-tie', { wakeAt: T + 10 }],
        ['first', { wakeAt: T }],
        ['paused', { wakeAt: T, paused: true }],
        ['future', { wakeAt: T + 101 }],
        ['never', { wakeAt: null }],
        ['other', { wakeAt: T, workflow: other }],
      ];
      for (const [name, overrides] of specs)
        await suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow, overrides));
      const before = await suite.store.getSchedule(s.id('first'));
      const request = (limit: number) => ({
        owner: 'worker-3',
        token: randomUUID(),
        now: T + 100,
        leaseUntil: T + 30_100,
        limit,
        workflows: [s.workflow],
      });
      const first = request(2);
      const claimed = await suite.store.claimSchedules(first);
      expect(claimed.map((r) => r.id).sort()).toEqual(['a-tie', 'first'].map(s.id));
      const expected = { ...before, leaseToken: first.token, leaseOwner: 'worker-3', leaseUntil: T + 30_100 };
      expect(claimed.find((r) => r.id === s.id('first'))).toEqual(expected);
      expect(await suite.store.getSchedule(s.id('first'))).toEqual(expected);
      expect((await suite.store.claimSchedules(request(1))).map((r) => r.id)).toEqual([s.id('b-tie')]);
      expect((await suite.store.claimSchedules(request(10))).map((r) => r.id)).toEqual([s.id('late')]);
      expect(await suite.store.claimSchedules(request(10))).toEqual([]);
    });

    it('claimSchedules: passes over a live lease and takes over a lapsed one', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const request = (now: number) => ({
        owner: 'w',
        token: randomUUID(),
        now,
        leaseUntil: now + 1_000,
        limit: 10,
        workflows: [s.workflow],
      });
      expect(await suite.store.claimSchedules(request(T))).toHaveLength(1);
      expect(await suite.store.claimSchedules(request(T + 1_000))).toEqual([]);
      const takeover = request(T + 1_001);
      expect((await suite.store.claimSchedules(takeover)).map((r) => r.leaseToken)).toEqual([takeover.token]);
    });

    it('claimSchedules: concurrent claims never return the same schedule', async () => {
      const s = testScope();
      await Promise.all(range(20).map((i) => suite.store.saveSchedule(scheduleSave(s.id(pad(i)), s.workflow))));
      const claim = (limit: number) =>
        suite.store.claimSchedules({
          owner: 'w',
          token: randomUUID(),
          now: T,
          leaseUntil: T + 30_000,
          limit,
          workflows: [s.workflow],
        });
      const claims = await Promise.all(range(6).map(() => claim(4)));
      const ids = [...claims.flat(), ...(await claim(100))].map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(20);
    });

    it('writeSchedule: the lease holder sets state, wakeAt, revision + 1 and updatedAt; release clears the lease', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const token = randomUUID();
      await suite.store.claimSchedules({
        owner: 'w',
        token,
        now: T,
        leaseUntil: T + 30_000,
        limit: 1,
        workflows: [s.workflow],
      });
      const before = (await suite.store.getSchedule(s.id('a')))!;
      expect(
        await suite.store.writeSchedule(s.id('a'), token, {
          now: T + 5,
          state: { last: T },
          wakeAt: T + 60_000,
          release: false,
        }),
      ).toBe(true);
      expect(await suite.store.getSchedule(s.id('a'))).toEqual({
        ...before,
        state: { last: T },
        wakeAt: T + 60_000,
        revision: 2,
        updatedAt: T + 5,
      });
      expect(
        await suite.store.writeSchedule(s.id('a'), token, {
          now: T + 6,
          state: { last: 1 },
          wakeAt: null,
          release: true,
        }),
      ).toBe(true);
      expect(await suite.store.getSchedule(s.id('a'))).toMatchObject({
        state: { last: 1 },
        wakeAt: null,
        revision: 3,
        leaseToken: null,
        leaseUntil: null,
      });
      expect(
        await suite.store.writeSchedule(s.id('a'), token, { now: T + 7, state: {}, wakeAt: T, release: true }),
      ).toBe(false);
    });

    it('writeSchedule: without release, leaseUntil extends the lease (claims pass it over until then); absent, the lease keeps its end', async () => {
      const s = testScope();
      const store = suite.store;
      await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const token = randomUUID();
      const claim = (now: number) =>
        store.claimSchedules({
          owner: 'w2',
          token: randomUUID(),
          now,
          leaseUntil: now + 1_000,
          limit: 1,
          workflows: [s.workflow],
        });
      await store.claimSchedules({
        owner: 'w',
        token,
        now: T,
        leaseUntil: T + 1_000,
        limit: 1,
        workflows: [s.workflow],
      });
      expect(
        await store.writeSchedule(s.id('a'), token, {
          now: T + 10,
          state: { n: 1 },
          wakeAt: T + 500,
          release: false,
          leaseUntil: T + 5_000,
        }),
      ).toBe(true);
      expect(await store.getSchedule(s.id('a'))).toMatchObject({
        leaseToken: token,
        leaseOwner: 'w',
        leaseUntil: T + 5_000,
        wakeAt: T + 500,
        revision: 2,
      });
      expect(
        await store.writeSchedule(s.id('a'), token, { now: T + 20, state: { n: 2 }, wakeAt: T + 600, release: false }),
      ).toBe(true);
      expect(await store.getSchedule(s.id('a'))).toMatchObject({
        leaseToken: token,
        leaseUntil: T + 5_000,
        wakeAt: T + 600,
        revision: 3,
      });
      expect(await claim(T + 2_000)).toEqual([]);
      expect(await claim(T + 5_000)).toEqual([]);
      expect(await claim(T + 5_001)).toHaveLength(1);
      expect(
        await store.writeSchedule(s.id('a'), token, {
          now: T + 5_002,
          state: {},
          wakeAt: T,
          release: false,
          leaseUntil: T + 99_000,
        }),
      ).toBe(false);
      expect((await store.getSchedule(s.id('a')))!.leaseUntil).toBe(T + 6_001);
    });

    it('writeSchedule: a stale token or an unknown id writes nothing; a lapsed but unclaimed token still writes', async () => {
      const s = testScope();
      await suite.store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
      const old = randomUUID();
      await suite.store.claimSchedules({
        owner: 'w',
        token: old,
        now: T,
        leaseUntil: T + 1_000,
        limit: 1,
        workflows: [s.workflow],
      });
      expect(
        await suite.store.writeSchedule(s.id('a'), old, { now: T + 2_000, state: { n: 1 }, wakeAt: T, release: false }),
      ).toBe(true);
      const fresh = randomUUID();
      await suite.store.claimSchedules({
        owner: 'w2',
        token: fresh,
        now: T + 3_000,
        leaseUntil: T + 9_000,
        limit: 1,
        workflows: [s.workflow],
      });
      const before = await suite.store.getSchedule(s.id('a'));
      expect(
        await suite.store.writeSchedule(s.id('a'), old, {
          now: T + 3_001,
          state: { n: 2 },
          wakeAt: null,
          release: true,
        }),
      ).toBe(false);
      expect(await suite.store.getSchedule(s.id('a'))).toEqual(before);
      expect(
        await suite.store.writeSchedule(s.id('missing'), old, { now: T, state: {}, wakeAt: null, release: false }),
      ).toBe(false);
    });

    it('schedules: the store keeps its own copy of spec, input and state', async () => {
      const s = testScope();
      const save = scheduleSave(s.id('a'), s.workflow, { spec: { every: 1 }, input: { n: 1 }, state: { n: 1 } });
      const saved = (await suite.store.saveSchedule(save))!;
      (save.spec as { every: number }).every = 2;
      (saved.input as { n: number }).n = 2;
      const read = (await suite.store.getSchedule(s.id('a')))!;
      (read.state as { n: number }).n = 2;
      expect(await suite.store.getSchedule(s.id('a'))).toMatchObject({
        spec: { every: 1 },
        input: { n: 1 },
        state: { n: 1 },
      });
    });
  });
}
