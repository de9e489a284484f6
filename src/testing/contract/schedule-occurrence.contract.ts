import { randomUUID } from 'node:crypto';
import {
  BASE_TIME as T,
  lastSignalId,
  newInstance,
  range,
  scheduleSave,
  testScope,
  type TestScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `createOccurrence`: a schedule occurrence's create, fenced by the schedule's lease. */
export function scheduleOccurrenceContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;

  /** A schedule `name` leased under the returned token (lease until `T + 1_000`). */
  async function leased(s: TestScope, name: string): Promise<string> {
    await suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow));
    const token = randomUUID();
    const claimed = await suite.store.claimSchedules({
      owner: 'w',
      token,
      now: T,
      leaseUntil: T + 1_000,
      limit: 1,
      workflows: [s.workflow],
    });
    expect(claimed.map((r) => r.id)).toEqual([s.id(name)]);
    return token;
  }

  const occurrence = (s: TestScope, schedule: string, at: number) =>
    newInstance(`${s.id(schedule)}@${at}`, s.workflow, { scheduleId: s.id(schedule), scheduledAt: at, input: { at } });

  describe('createOccurrence', () => {
    it('createOccurrence: creates as create() does while the token is the lease token; again, returns the stored instance', async () => {
      const s = testScope();
      const token = await leased(s, 'a');
      const cursor = await lastSignalId(suite.store);
      const init = occurrence(s, 'a', T);
      const first = await suite.store.createOccurrence(s.id('a'), token, init);
      expect(first).toMatchObject({
        created: true,
        instance: {
          id: init.id,
          status: 'pending',
          scheduleId: s.id('a'),
          scheduledAt: T,
          input: { at: T },
          wakeAt: T,
          signalCursor: cursor,
        },
      });
      expect(await suite.store.get(init.id)).toEqual({ ...first!.instance, waits: [] });
      expect(await suite.store.createOccurrence(s.id('a'), token, { ...init, input: 'other', now: T + 5 })).toEqual({
        instance: first!.instance,
        created: false,
      });
      // The schedule itself is untouched.
      expect(await suite.store.getSchedule(s.id('a'))).toMatchObject({
        revision: 1,
        leaseToken: token,
        leaseUntil: T + 1_000,
      });
    });

    it('createOccurrence: returns null and creates nothing once a save released the lease, the schedule was deleted or claimed under another token', async () => {
      const s = testScope();
      const released = await leased(s, 'released');
      await suite.store.saveSchedule(
        scheduleSave(s.id('released'), s.workflow, {
          paused: true,
          wakeAt: null,
          expectRevision: 1,
          releaseLease: true,
          now: T + 1,
        }),
      );
      const deleted = await leased(s, 'deleted');
      expect(await suite.store.deleteSchedule(s.id('deleted'))).toBe(true);
      const lapsed = await leased(s, 'taken');
      await suite.store.claimSchedules({
        owner: 'w2',
        token: randomUUID(),
        now: T + 1_001,
        leaseUntil: T + 9_000,
        limit: 1,
        workflows: [s.workflow],
      });
      await suite.store.saveSchedule(scheduleSave(s.id('free'), s.workflow));
      for (const [schedule, token] of [
        ['released', released],
        ['deleted', deleted],
        ['taken', lapsed],
        ['free', randomUUID()],
        ['missing', randomUUID()],
      ] as const) {
        const init = occurrence(s, schedule, T);
        expect(await suite.store.createOccurrence(s.id(schedule), token, init), schedule).toBeNull();
        expect(await suite.store.get(init.id), schedule).toBeNull();
      }
    });

    it('createOccurrence: creates while the lease is live at now (up to leaseUntil); nothing once it lapsed, even while nobody took it over', async () => {
      const s = testScope();
      const token = await leased(s, 'a');
      const init = occurrence(s, 'a', T);
      const { instance } = (await suite.store.createOccurrence(s.id('a'), token, { ...init, now: T + 1_000 }))!;
      expect(instance).toMatchObject({ id: init.id, createdAt: T + 1_000 });
      // A holder that stalled past its lease: the token still stands, the lease does not.
      const late = occurrence(s, 'a', T + 1);
      expect(await suite.store.createOccurrence(s.id('a'), token, { ...late, now: T + 1_001 })).toBeNull();
      expect(await suite.store.get(late.id)).toBeNull();
      expect(await suite.store.createOccurrence(s.id('a'), token, { ...init, now: T + 1_001 })).toBeNull();
      expect(await suite.store.getSchedule(s.id('a'))).toMatchObject({ leaseToken: token, leaseUntil: T + 1_000 });
      // A write of the holder that extends the lease makes it live again.
      expect(
        await suite.store.writeSchedule(s.id('a'), token, {
          now: T + 1_002,
          state: null,
          wakeAt: T,
          release: false,
          leaseUntil: T + 5_000,
        }),
      ).toBe(true);
      expect(await suite.store.createOccurrence(s.id('a'), token, { ...late, now: T + 1_003 })).toMatchObject({
        created: true,
        instance: { id: late.id },
      });
    });

    it('createOccurrence: an instance that exists under a lost lease returns null, unchanged', async () => {
      const s = testScope();
      const token = await leased(s, 'a');
      const init = occurrence(s, 'a', T);
      const { instance } = (await suite.store.createOccurrence(s.id('a'), token, { ...init, now: T + 500 }))!;
      await suite.store.saveSchedule(
        scheduleSave(s.id('a'), s.workflow, { expectRevision: 1, releaseLease: true, now: T + 501 }),
      );
      expect(await suite.store.createOccurrence(s.id('a'), token, init)).toBeNull();
      expect(await suite.store.get(init.id)).toEqual({ ...instance, waits: [] });
    });

    it('createOccurrence without a token (a trigger): creates while the schedule exists, paused, leased by anyone or not; nothing once it was deleted', async () => {
      const s = testScope();
      await leased(s, 'leased');
      await suite.store.saveSchedule(scheduleSave(s.id('paused'), s.workflow, { paused: true, wakeAt: null }));
      await suite.store.saveSchedule(scheduleSave(s.id('free'), s.workflow));
      for (const schedule of ['leased', 'paused', 'free']) {
        const init = occurrence(s, schedule, T + 2_000);
        const created = await suite.store.createOccurrence(s.id(schedule), null, { ...init, now: T + 2_000 });
        expect(created, schedule).toMatchObject({
          created: true,
          instance: { id: init.id, scheduleId: s.id(schedule) },
        });
        expect(
          await suite.store.createOccurrence(s.id(schedule), null, { ...init, input: 'other', now: T + 2_001 }),
          schedule,
        ).toEqual({ instance: created!.instance, created: false });
      }
      expect(await suite.store.getSchedule(s.id('leased'))).toMatchObject({ revision: 1, leaseUntil: T + 1_000 });
      expect(await suite.store.deleteSchedule(s.id('free'))).toBe(true);
      for (const schedule of ['free', 'missing']) {
        const init = occurrence(s, schedule, T + 3_000);
        expect(await suite.store.createOccurrence(s.id(schedule), null, init), schedule).toBeNull();
        expect(await suite.store.get(init.id), schedule).toBeNull();
      }
      expect(await suite.store.createOccurrence(s.id('free'), null, occurrence(s, 'free', T + 2_000))).toBeNull();
    });

    it('createOccurrence: racing saves that release the lease, each create lands before its save or not at all', async () => {
      const s = testScope();
      for (const i of range(8)) {
        const name = `r${i}`;
        const token = await leased(s, name);
        const init = occurrence(s, name, T + i);
        const [created] = await Promise.all([
          suite.store.createOccurrence(s.id(name), token, init),
          suite.store.saveSchedule(
            scheduleSave(s.id(name), s.workflow, {
              paused: true,
              wakeAt: null,
              expectRevision: 1,
              releaseLease: true,
              now: T + 1,
            }),
          ),
        ]);
        const stored = await suite.store.get(init.id);
        if (created) expect({ created: created.created, id: stored?.id }).toEqual({ created: true, id: init.id });
        else expect(stored).toBeNull();
        expect(await suite.store.createOccurrence(s.id(name), token, occurrence(s, name, T + 100 + i))).toBeNull();
      }
    });

    it('createOccurrence without a token: racing deletes, each create lands before its delete or not at all', async () => {
      const s = testScope();
      for (const i of range(8)) {
        const name = `d${i}`;
        await suite.store.saveSchedule(scheduleSave(s.id(name), s.workflow));
        const init = occurrence(s, name, T + i);
        const [created, deleted] = await Promise.all([
          suite.store.createOccurrence(s.id(name), null, init),
          suite.store.deleteSchedule(s.id(name)),
        ]);
        expect(deleted).toBe(true);
        const stored = await suite.store.get(init.id);
        if (created) expect({ created: created.created, id: stored?.id }).toEqual({ created: true, id: init.id });
        else expect(stored).toBeNull();
        expect(await suite.store.createOccurrence(s.id(name), null, occurrence(s, name, T + 100 + i))).toBeNull();
      }
    });
  });
}
