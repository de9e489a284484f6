import { randomUUID } from 'node:crypto';
import { type WorkflowStatus } from '../../storage/workflow-instance.js';
import {
  BASE_TIME as T,
  claimRequest,
  details,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  range,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `write`: fenced by the lease token; the journal upsert, the fields it sets, the release and the signal it carries. */
export function writeContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('write', () => {
    it('write: a stale token writes nothing (journal, fields, waits, signal) and returns false', async () => {
      const s = testScope();
      const { token: old, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow), {
        leaseUntil: T + 1_000,
      });
      await suite.store.claim(claimRequest(s.workflow, { now: T + 2_000 }));
      const before = await snapshot(suite.store, s.id('a'));
      const last = await lastSignalId(suite.store);
      const wrote = await suite.store.write(s.id('a'), old, {
        now: T + 2_001,
        entries: [journalEntry('late')],
        status: 'completed',
        output: { late: true },
        customStatus: { stage: 'late' },
        signal: newSignal(s.signal('end'), { dedupeId: 'end-1' }),
        release: { wakeAt: T + 9_000, waits: [{ name: s.signal('n'), key: null }], signalCursor: cursor },
      });
      expect(wrote).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(
        await suite.store.signals({ name: s.signal('end'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
      ).toEqual([]);
      expect(await lastSignalId(suite.store)).toBe(last);
      // The dedupeId was not taken by the failed write.
      expect((await suite.store.signal(newSignal(s.signal('end'), { dedupeId: 'end-1' }))).created).toBe(true);
    });

    it('write: a released lease, a made-up token or an unknown id writes nothing', async () => {
      const s = testScope();
      const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      expect(await suite.store.write(s.id('a'), randomUUID(), { now: T + 1, entries: [journalEntry('x')] })).toBe(
        false,
      );
      await suite.store.write(s.id('a'), token, {
        now: T + 1,
        entries: [],
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
      const before = await snapshot(suite.store, s.id('a'));
      expect(
        await suite.store.write(s.id('a'), token, { now: T + 2, entries: [journalEntry('x')], status: 'failed' }),
      ).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.write(s.id('missing'), token, { now: T + 2, entries: [journalEntry('x')] })).toBe(false);
      expect(await suite.store.get(s.id('missing'))).toBeNull();
    });

    it('write: a lapsed lease still writes while nobody claimed the instance since', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
      expect(
        await suite.store.write(s.id('a'), token, {
          now: T + 5_000,
          entries: [journalEntry('late')],
          status: 'running',
        }),
      ).toBe(true);
      expect((await details(suite.store, s.id('a'))).journal!.map((e) => e.name)).toEqual(['late']);
    });

    it('write and renew: a lapsed holder racing a takeover claim never changes the instance after the claim (20 rounds)', async () => {
      const s = testScope();
      for (const round of range(20)) {
        const id = s.id(`r${round}`);
        const workflow = `${s.workflow}-${round}`;
        const { token, cursor } = await lease(suite.store, newInstance(id, workflow), { leaseUntil: T + 1_000 });
        const takeover = claimRequest(workflow, { now: T + 2_000 });
        // Landing first, either call leaves the instance claimable at T + 2000; landing second, it must change nothing.
        const late =
          round % 4 < 2
            ? () =>
                suite.store.write(id, token, {
                  now: T + 2_000,
                  entries: [journalEntry('late')],
                  status: 'suspended',
                  release: { wakeAt: T + 2_000, waits: [], signalCursor: cursor },
                })
            : () => suite.store.renew(id, token, T + 1_500);
        const claim = () => suite.store.claim(takeover);
        const [claimed] =
          round % 2 === 0
            ? await Promise.all([claim(), late()])
            : await Promise.all([late(), claim()]).then(([l, c]) => [c, l] as const);
        // A claim may skip the row while the holder's call has it locked; then a later claim takes it.
        const winner = claimed.instances.length > 0 ? takeover : claimRequest(workflow, { now: T + 2_000 });
        if (claimed.instances.length === 0) expect((await suite.store.claim(winner)).instances).toHaveLength(1);
        expect(await details(suite.store, id), `round ${round}`).toMatchObject({
          status: 'running',
          runs: 2,
          leaseToken: winner.token,
          leaseUntil: winner.leaseUntil,
        });
      }
    });

    it('write: upserts entries by name: a new name goes after every existing one, a replaced entry whole and in place', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      await suite.store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('b'), journalEntry('a')] });
      await suite.store.write(s.id('a'), token, {
        now: T + 2,
        entries: [
          journalEntry('c'),
          { name: 'b', kind: 'sleep', state: 'waiting', wakeAt: T + 99, createdAt: T, updatedAt: T + 2 },
        ],
      });
      await suite.store.write(s.id('a'), token, {
        now: T + 3,
        entries: [journalEntry('a', { value: 'again', attempts: 2 })],
      });
      const journal = (await details(suite.store, s.id('a'))).journal!;
      expect(journal.map((e) => e.name)).toEqual(['b', 'a', 'c']);
      expect(journal[0]).toEqual({
        name: 'b',
        kind: 'sleep',
        state: 'waiting',
        wakeAt: T + 99,
        createdAt: T,
        updatedAt: T + 2,
      });
      expect(journal[1]).toEqual(journalEntry('a', { value: 'again', attempts: 2 }));
    });

    it('write: a journal-only write leaves updatedAt and every other field unchanged', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const { journal: _journal, ...before } = await details(suite.store, s.id('a'));
      expect(await suite.store.write(s.id('a'), token, { now: T + 777, entries: [journalEntry('x')] })).toBe(true);
      const { journal, ...after } = await details(suite.store, s.id('a'));
      expect(after).toEqual(before);
      expect(journal).toHaveLength(1);
    });

    it('write: sets status, output, error and customStatus when given, leaves them when undefined, and sets updatedAt', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      await suite.store.write(s.id('a'), token, {
        now: T + 10,
        entries: [],
        status: 'compensating',
        output: { total: 5 },
        error: { name: 'Error', message: 'first', stack: 'at x' },
        customStatus: { stage: 'one' },
      });
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'compensating',
        output: { total: 5 },
        error: { name: 'Error', message: 'first', stack: 'at x' },
        customStatus: { stage: 'one' },
        updatedAt: T + 10,
      });
      await suite.store.write(s.id('a'), token, { now: T + 20, entries: [], customStatus: null });
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'compensating',
        output: { total: 5 },
        error: { name: 'Error', message: 'first' },
        customStatus: null,
        updatedAt: T + 20,
      });
      await suite.store.write(s.id('a'), token, {
        now: T + 30,
        entries: [],
        error: null,
        output: null,
        status: 'running',
      });
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'running',
        output: null,
        error: null,
        updatedAt: T + 30,
      });
    });

    it('write: release replaces the waits, clears leaseToken and leaseUntil, keeps leaseOwner and sets wakeAt to release.wakeAt', async () => {
      const s = testScope();
      const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow), { owner: 'worker-7' });
      const waits = [
        { name: s.signal('x'), key: 'k' },
        { name: s.signal('y'), key: null },
      ];
      expect(
        await suite.store.write(s.id('a'), token, {
          now: T + 10,
          entries: [],
          status: 'suspended',
          release: { wakeAt: T + 5_000, waits, signalCursor: cursor },
        }),
      ).toBe(true);
      const parked = await details(suite.store, s.id('a'));
      // Waits are a set: any order.
      expect([...parked.waits].sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual(waits);
      expect(parked).toMatchObject({
        status: 'suspended',
        leaseToken: null,
        leaseUntil: null,
        leaseOwner: 'worker-7',
        wakeAt: T + 5_000,
        updatedAt: T + 10,
      });
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 5_000 }));
      await suite.store.write(s.id('a'), claim.instances[0]!.leaseToken!, {
        now: T + 5_001,
        entries: [],
        status: 'suspended',
        release: { wakeAt: null, waits: [], signalCursor: claim.lastSignalId },
      });
      expect(await details(suite.store, s.id('a'))).toMatchObject({ waits: [], wakeAt: null });
    });

    it('write: release wakes now when a signal above release.signalCursor matches a new wait by name and exact key', async () => {
      const s = testScope();
      const name = s.signal('n');
      const a = await lease(suite.store, newInstance(s.id('a'), `${s.workflow}-a`));
      const b = await lease(suite.store, newInstance(s.id('b'), `${s.workflow}-b`));
      await suite.store.signal(newSignal(name, { key: 'k1' }));
      await suite.store.signal(newSignal(name, { key: null }));
      const release = (cursor: number, key: string | null) => ({
        now: T + 50,
        entries: [],
        status: 'suspended' as const,
        release: {
          wakeAt: null,
          waits: [
            { name: s.signal('other'), key: null },
            { name, key },
          ],
          signalCursor: cursor,
        },
      });
      expect(await suite.store.write(s.id('a'), a.token, release(a.cursor, 'k1'))).toBe(true);
      expect(await suite.store.write(s.id('b'), b.token, release(b.cursor, null))).toBe(true);
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 50);
      expect((await details(suite.store, s.id('b'))).wakeAt).toBe(T + 50);
    });

    it('write: release keeps release.wakeAt when the matching signals are at or below the cursor, or differ in name or key', async () => {
      const s = testScope();
      const name = s.signal('n');
      await suite.store.signal(newSignal(name, { key: 'k1' }));
      const a = await lease(suite.store, newInstance(s.id('a'), `${s.workflow}-a`));
      const b = await lease(suite.store, newInstance(s.id('b'), `${s.workflow}-b`));
      await suite.store.signal(newSignal(name, { key: 'k2' }));
      await suite.store.signal(newSignal(name, { key: null }));
      await suite.store.signal(newSignal(s.signal('other'), { key: 'k1' }));
      const release = (cursor: number, key: string | null) => ({
        now: T + 50,
        entries: [],
        status: 'suspended' as const,
        release: { wakeAt: T + 5_000, waits: [{ name, key }], signalCursor: cursor },
      });
      expect(await suite.store.write(s.id('a'), a.token, release(a.cursor, 'k1'))).toBe(true);
      expect(await suite.store.write(s.id('b'), b.token, release(b.cursor, 'k3'))).toBe(true);
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 5_000);
      expect((await details(suite.store, s.id('b'))).wakeAt).toBe(T + 5_000);
    });

    it('write: release compares signals with the cursor the release carries, not with the one stored when the instance was created', async () => {
      const s = testScope();
      const name = s.signal('n');
      const init = newInstance(s.id('a'), s.workflow);
      const { instance } = await suite.store.create(init);
      // Sent after the instance was created but before it was claimed: the execution saw it (an
      // earlier wait took it), so a wait registered now is not already satisfied.
      const seen = await suite.store.signal(newSignal(name, { key: 'k' }));
      expect(seen.id).toBeGreaterThan(instance.signalCursor);
      const { token, cursor } = await lease(suite.store, init);
      expect(cursor).toBeGreaterThanOrEqual(seen.id);
      const suspend = (at: number, signalCursor: number, token: string) =>
        suite.store.write(s.id('a'), token, {
          now: at,
          entries: [],
          status: 'suspended',
          release: { wakeAt: T + 5_000, waits: [{ name, key: 'k' }], signalCursor },
        });
      expect(await suspend(T + 50, cursor, token)).toBe(true);
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 5_000);

      // Claimed again later: a signal above the first claim's cursor but below this claim's was seen too.
      await suite.store.signal(newSignal(name, { key: 'k', now: T + 60 }));
      const again = claimRequest(s.workflow, { now: T + 5_000 });
      const claim = await suite.store.claim(again);
      expect(claim.instances.map((i) => i.id)).toEqual([s.id('a')]);
      expect(await suspend(T + 5_001, claim.lastSignalId, again.token)).toBe(true);
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 5_000);

      // And one above the cursor the release carries (sent while the execution ran) wakes it at once.
      const third = claimRequest(s.workflow, { now: T + 5_000 });
      const last = await suite.store.claim(third);
      await suite.store.signal(newSignal(name, { key: 'k', now: T + 5_002 }));
      expect(await suspend(T + 5_003, last.lastSignalId, third.token)).toBe(true);
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 5_003);
    });

    it('write: release wakes now when the instance has cancelRequested and goes suspended, not when it ends', async () => {
      const s = testScope();
      const a = await lease(suite.store, newInstance(s.id('a'), `${s.workflow}-a`));
      const b = await lease(suite.store, newInstance(s.id('b'), `${s.workflow}-b`));
      await suite.store.requestCancel(s.id('a'), { reason: null, now: T + 1, terminate: false });
      await suite.store.requestCancel(s.id('b'), { reason: null, now: T + 1, terminate: true });
      const write = (status: WorkflowStatus, cursor: number) => ({
        now: T + 60,
        entries: [],
        status,
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
      await suite.store.write(s.id('a'), a.token, write('suspended', a.cursor));
      await suite.store.write(s.id('b'), b.token, write('cancelled', b.cursor));
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 60);
      expect((await details(suite.store, s.id('b'))).wakeAt).toBeNull();
    });

    it('write: release wakes now when the instance has terminateRequested and goes (or stays) compensating, not for a cancel', async () => {
      const s = testScope();
      // Sent one by one, then together (a store may batch concurrent writes into one statement).
      for (const together of [false, true]) {
        const id = (name: string) => s.id(`${name}-${String(together)}`);
        const workflow = (name: string) => `${s.workflow}-${name}-${String(together)}`;
        const goes = await lease(suite.store, newInstance(id('goes'), workflow('goes')));
        const stays = await lease(suite.store, newInstance(id('stays'), workflow('stays')));
        const cancelled = await lease(suite.store, newInstance(id('cancelled'), workflow('cancelled')));
        expect(
          await suite.store.write(id('stays'), stays.token, { now: T + 1, entries: [], status: 'compensating' }),
        ).toBe(true);
        await suite.store.requestCancel(id('goes'), { reason: null, now: T + 2, terminate: true });
        await suite.store.requestCancel(id('stays'), { reason: null, now: T + 2, terminate: true });
        await suite.store.requestCancel(id('cancelled'), { reason: null, now: T + 2, terminate: false });
        const release = (cursor: number) => ({ wakeAt: T + 60_000, waits: [], signalCursor: cursor });
        const writes = [
          () =>
            suite.store.write(id('goes'), goes.token, {
              now: T + 60,
              entries: [],
              status: 'compensating',
              release: release(goes.cursor),
            }),
          () =>
            suite.store.write(id('stays'), stays.token, { now: T + 60, entries: [], release: release(stays.cursor) }),
          () =>
            suite.store.write(id('cancelled'), cancelled.token, {
              now: T + 60,
              entries: [],
              status: 'compensating',
              release: release(cancelled.cursor),
            }),
        ];
        const wrote = together
          ? await Promise.all(writes.map((write) => write()))
          : [await writes[0]!(), await writes[1]!(), await writes[2]!()];
        expect(wrote).toEqual([true, true, true]);
        expect(await details(suite.store, id('goes'))).toMatchObject({ status: 'compensating', wakeAt: T + 60 });
        expect(await details(suite.store, id('stays'))).toMatchObject({ status: 'compensating', wakeAt: T + 60 });
        // A cancel doesn't stop compensations (they are what it asks for): their backoff stands.
        expect(await details(suite.store, id('cancelled'))).toMatchObject({
          status: 'compensating',
          wakeAt: T + 60_000,
        });
      }
    });

    it('write: a signal in the write is stored as signal() stores it: waking waiters and deduplicated', async () => {
      const s = testScope();
      const name = s.signal('child-ended');
      const parent = s.id('parent');
      await settle(suite.store, newInstance(parent, `${s.workflow}-p`), 'suspended', {
        waits: [{ name, key: 'child-1' }],
      });
      const child = await lease(suite.store, newInstance(s.id('child'), `${s.workflow}-c`));
      const end = newSignal(name, { key: 'child-1', dedupeId: 'child-1:end', payload: { output: 42 }, now: T + 70 });
      expect(
        await suite.store.write(s.id('child'), child.token, {
          now: T + 70,
          entries: [],
          status: 'completed',
          output: 42,
          signal: end,
          release: { wakeAt: null, waits: [], signalCursor: child.cursor },
        }),
      ).toBe(true);
      expect(await details(suite.store, parent)).toMatchObject({ wakeAt: T + 70 });
      const all = { name, key: 'child-1', afterId: 0, upToId: Number.MAX_SAFE_INTEGER };
      const stored = await suite.store.signals(all);
      expect(stored).toEqual([{ id: stored[0]!.id, name, key: 'child-1', payload: { output: 42 }, createdAt: T + 70 }]);
      const twin = await lease(suite.store, newInstance(s.id('twin'), `${s.workflow}-t`));
      expect(await suite.store.write(s.id('twin'), twin.token, { now: T + 80, entries: [], signal: end })).toBe(true);
      expect(await suite.store.signals(all)).toHaveLength(1);
    });

    it('write: the store keeps its own copy of entries and values', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const entry = journalEntry('a', { value: { n: 1 } });
      const output = { n: 1 };
      const waits = [{ name: s.signal('n'), key: null }];
      await suite.store.write(s.id('a'), token, {
        now: T + 1,
        entries: [entry],
        output,
        status: 'suspended',
        release: { wakeAt: null, waits, signalCursor: 0 },
      });
      (entry.value as { n: number }).n = 2;
      output.n = 2;
      waits[0]!.name = 'changed';
      const read = await details(suite.store, s.id('a'));
      (read.journal![0]!.value as { n: number }).n = 3;
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        output: { n: 1 },
        waits: [{ name: s.signal('n'), key: null }],
        journal: [{ value: { n: 1 } }],
      });
    });

    it('write: an entry object changed in place and written again is stored as it is at that write', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const entry = journalEntry('a', { value: { n: 1 } });
      const other = journalEntry('b', { value: 'b1' });
      expect(await suite.store.write(s.id('a'), token, { now: T + 1, entries: [entry, other] })).toBe(true);
      (entry.value as { n: number }).n = 2;
      other.value = 'b2';
      // Alone, then with another entry (the paths that send one entry and several).
      expect(await suite.store.write(s.id('a'), token, { now: T + 2, entries: [entry] })).toBe(true);
      expect((await details(suite.store, s.id('a'))).journal).toMatchObject([
        { name: 'a', value: { n: 2 } },
        { name: 'b', value: 'b1' },
      ]);
      (entry.value as { n: number }).n = 3;
      expect(await suite.store.write(s.id('a'), token, { now: T + 3, entries: [entry, other] })).toBe(true);
      expect((await details(suite.store, s.id('a'))).journal).toMatchObject([
        { name: 'a', value: { n: 3 } },
        { name: 'b', value: 'b2' },
      ]);
    });
  });
}
