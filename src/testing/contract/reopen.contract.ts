import { CHILD_ENDED_SIGNAL } from '../../storage/workflow-store-signals.js';
import { FINISHED_STATUSES } from '../../storage/workflow-instance.js';
import {
  BASE_TIME as T,
  claimRequest,
  details,
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

/** `reopen`: a finished instance starts again from a kept journal prefix. */
export function reopenContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('reopen', () => {
    const ended = async (id: string, workflow: string, deadline: number | null = T + 99_000) => {
      const { token, cursor } = await lease(suite.store, newInstance(id, workflow, { deadline }));
      await suite.store.requestCancel(id, { reason: 'stop', now: T + 1, terminate: true });
      await suite.store.write(id, token, {
        now: T + 2,
        entries: [journalEntry('step-1'), journalEntry('step-2')],
        status: 'cancelled',
        error: { name: 'WorkflowTerminatedError', message: 'stop' },
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
    };

    it('reopen: upserts entries, sets status and error, clears the cancel flags, makes it due now and sets updatedAt', async () => {
      const s = testScope();
      await ended(s.id('a'), s.workflow);
      const before = await details(suite.store, s.id('a'));
      const accepted = await suite.store.reopen(s.id('a'), {
        expect: { status: 'cancelled', runs: 1 },
        status: 'compensating',
        error: null,
        entries: [journalEntry('step-2', { compensated: true }), journalEntry('step-3')],
        now: T + 500,
      });
      expect(accepted).toBe(true);
      const after = await details(suite.store, s.id('a'));
      expect(after).toEqual({
        ...before,
        status: 'compensating',
        error: null,
        cancelRequested: false,
        terminateRequested: false,
        cancelReason: null,
        wakeAt: T + 500,
        updatedAt: T + 500,
        journal: [journalEntry('step-1'), journalEntry('step-2', { compensated: true }), journalEntry('step-3')],
      });
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + 500 }));
      expect(claim.instances.map((i) => [i.id, i.status, i.runs])).toEqual([[s.id('a'), 'compensating', 2]]);
    });

    it('reopen: to compensating keeps a cancel (not a terminate) and its reason; to pending clears it', async () => {
      const s = testScope();
      const ends = [
        ['a', 'compensation_failed', 'compensating'],
        ['b', 'cancelled', 'pending'],
      ] as const;
      for (const [name, status, reopened] of ends) {
        const id = s.id(name);
        const { token, cursor } = await lease(suite.store, newInstance(id, `${s.workflow}-${name}`));
        await suite.store.requestCancel(id, { reason: 'changed my mind', now: T + 1, terminate: false });
        const error = { name: 'WorkflowCancelledError', message: 'changed my mind' };
        const release = { wakeAt: null, waits: [], signalCursor: cursor };
        await suite.store.write(id, token, { now: T + 2, entries: [journalEntry('step-1')], status, error, release });
        const accepted = await suite.store.reopen(id, {
          expect: { status, runs: 1 },
          status: reopened,
          error,
          entries: [],
          now: T + 5,
        });
        expect(accepted).toBe(true);
      }
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'compensating',
        cancelRequested: true,
        terminateRequested: false,
        cancelReason: 'changed my mind',
        wakeAt: T + 5,
      });
      expect(await details(suite.store, s.id('b'))).toMatchObject({
        status: 'pending',
        cancelRequested: false,
        terminateRequested: false,
        cancelReason: null,
        wakeAt: T + 5,
      });
    });

    it('reopen: sets deadline when given (null included) and keeps it when undefined', async () => {
      const s = testScope();
      await ended(s.id('a'), `${s.workflow}-a`);
      await ended(s.id('b'), `${s.workflow}-b`);
      const reopen = {
        expect: { status: 'cancelled' as const, runs: 1 },
        status: 'pending' as const,
        error: null,
        entries: [],
        now: T + 5,
      };
      await suite.store.reopen(s.id('a'), { ...reopen, deadline: T + 123_000 });
      await suite.store.reopen(s.id('b'), { ...reopen, deadline: null });
      expect((await details(suite.store, s.id('a'))).deadline).toBe(T + 123_000);
      expect((await details(suite.store, s.id('b'))).deadline).toBeNull();
    });

    it('reopen: changes nothing when the status or runs differ from expect, or the id is unknown', async () => {
      const s = testScope();
      await ended(s.id('a'), s.workflow);
      const before = await snapshot(suite.store, s.id('a'));
      const base = { status: 'pending' as const, error: null, entries: [journalEntry('x')], now: T + 5 };
      expect(await suite.store.reopen(s.id('a'), { ...base, expect: { status: 'failed', runs: 1 } })).toBe(false);
      expect(await suite.store.reopen(s.id('a'), { ...base, expect: { status: 'cancelled', runs: 2 } })).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.reopen(s.id('missing'), { ...base, expect: { status: 'cancelled', runs: 1 } })).toBe(
        false,
      );
      expect(await suite.store.get(s.id('missing'))).toBeNull();
    });

    it('reopen: changes nothing while a live lease is held, and clears a lapsed lease token', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
      await suite.store.write(s.id('a'), token, {
        now: T + 10,
        entries: [],
        status: 'failed',
        error: { name: 'Error', message: 'x' },
      });
      const before = await snapshot(suite.store, s.id('a'));
      const reopen = {
        expect: { status: 'failed' as const, runs: 1 },
        status: 'pending' as const,
        error: null,
        entries: [],
      };
      expect(await suite.store.reopen(s.id('a'), { ...reopen, now: T + 1_000 })).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.reopen(s.id('a'), { ...reopen, now: T + 1_001 })).toBe(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'pending',
        leaseToken: null,
        wakeAt: T + 1_001,
      });
      expect(await suite.store.renew(s.id('a'), token, T + 60_000)).toBeNull();
      expect(await suite.store.write(s.id('a'), token, { now: T + 1_002, entries: [], status: 'failed' })).toBe(false);
      expect((await details(suite.store, s.id('a'))).status).toBe('pending');
    });

    it('reopen: deletes retractSignal with the reopen (that name and dedupeId then store anew), and nothing when refused', async () => {
      const s = testScope();
      const [endName, other] = [s.signal('ended'), s.signal('other')];
      await ended(s.id('a'), s.workflow);
      const endOf = (dedupeId: string, now = T + 3) =>
        newSignal(endName, { key: dedupeId, dedupeId, payload: { status: 'cancelled' }, now });
      const end = await suite.store.signal(endOf(s.id('a')));
      const kept = [
        await suite.store.signal(endOf(s.id('b'))),
        await suite.store.signal(newSignal(other, { key: s.id('a'), dedupeId: s.id('a') })),
      ];
      const all = async (name: string, key: string) =>
        (await suite.store.signals({ name, key, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).map((r) => r.id);
      const reopen = {
        status: 'pending' as const,
        error: null,
        entries: [],
        retractSignal: { name: endName, dedupeId: s.id('a') },
        now: T + 5,
      };
      expect(await suite.store.reopen(s.id('a'), { ...reopen, expect: { status: 'failed', runs: 1 } })).toBe(false);
      expect(await all(endName, s.id('a'))).toEqual([end.id]);
      expect(await suite.store.reopen(s.id('a'), { ...reopen, expect: { status: 'cancelled', runs: 1 } })).toBe(true);
      expect(await all(endName, s.id('a'))).toEqual([]);
      expect(await all(endName, s.id('b'))).toEqual([kept[0]!.id]);
      expect(await all(other, s.id('a'))).toEqual([kept[1]!.id]);
      // The instance's next end is stored, under a new id, and wakes its waiter as any signal does.
      const again = await suite.store.signal(endOf(s.id('a'), T + 9));
      expect(again).toMatchObject({ created: true, key: s.id('a') });
      expect(again.id).toBeGreaterThan(kept[1]!.id);
      expect(await all(endName, s.id('a'))).toEqual([again.id]);
      // A retractSignal that names nothing stored deletes nothing and does not refuse the reopen.
      await ended(s.id('c'), `${s.workflow}-c`);
      expect(
        await suite.store.reopen(s.id('c'), {
          ...reopen,
          retractSignal: { name: endName, dedupeId: s.id('c') },
          expect: { status: 'cancelled', runs: 1 },
        }),
      ).toBe(true);
      expect(await all(endName, s.id('a'))).toEqual([again.id]);
    });

    it('reopen: with awaitedChildren, refuses (changing nothing) unless each exists and is unfinished or has its end stored', async () => {
      const s = testScope();
      const [parent, running, done, endless] = ['parent', 'running', 'done', 'endless'].map(s.id) as [
        string,
        string,
        string,
        string,
      ];
      await ended(parent, s.workflow);
      await suite.store.create(newInstance(running, `${s.workflow}-c`, { parentId: parent, now: T + 3 }));
      for (const child of [done, endless])
        await settle(
          suite.store,
          newInstance(child, `${s.workflow}-${child}`, { parentId: parent, now: T + 3 }),
          'completed',
        );
      await suite.store.signal(
        newSignal(CHILD_ENDED_SIGNAL, { key: done, dedupeId: done, payload: { status: 'completed' }, now: T + 4 }),
      );
      // The parent's own end, retracted only when the reopen lands.
      await suite.store.signal(newSignal(CHILD_ENDED_SIGNAL, { key: parent, dedupeId: parent, now: T + 4 }));
      const before = await snapshot(suite.store, parent);
      const reopen = (awaitedChildren: string[]) =>
        suite.store.reopen(parent, {
          expect: { status: 'cancelled', runs: 1 },
          status: 'pending',
          error: null,
          entries: [journalEntry('step-2', { compensated: true })],
          retractSignal: { name: CHILD_ENDED_SIGNAL, dedupeId: parent },
          awaitedChildren,
          now: T + 5,
        });
      const parentEnds = async () =>
        (
          await suite.store.signals({
            name: CHILD_ENDED_SIGNAL,
            key: parent,
            afterId: 0,
            upToId: Number.MAX_SAFE_INTEGER,
          })
        ).length;
      // Finished with its end gone (purged), or gone itself (deleted): the reopened parent would wait forever.
      for (const awaited of [
        [running, done, endless],
        [running, done, s.id('gone')],
      ]) {
        expect(await reopen(awaited)).toBe(false);
        expect(await snapshot(suite.store, parent)).toEqual(before);
        expect(await parentEnds()).toBe(1);
      }
      expect(await reopen([running, done])).toBe(true);
      expect(await details(suite.store, parent)).toMatchObject({ status: 'pending', wakeAt: T + 5 });
      expect(await parentEnds()).toBe(0);
    });

    it('reopen: with awaitedChildren, racing a delete() of the child, never lands once the child is gone', async () => {
      const s = testScope();
      const pairs = range(16).map((i) => [s.id(`p${pad(i)}`), s.id(`p${pad(i)}/c`)] as const);
      for (const [parent, child] of pairs) {
        await ended(parent, s.workflow);
        await settle(suite.store, newInstance(child, `${s.workflow}-c`, { parentId: parent, now: T + 3 }), 'completed');
        await suite.store.signal(newSignal(CHILD_ENDED_SIGNAL, { key: child, dedupeId: child, now: T + 4 }));
      }
      const outcomes = await Promise.all(
        pairs.map(async ([parent, child], i) => {
          const reopening = suite.store.reopen(parent, {
            expect: { status: 'cancelled', runs: 1 },
            status: 'pending',
            error: null,
            entries: [],
            awaitedChildren: [child],
            now: T + 5,
          });
          // Each pair a little further apart, so the delete lands at a different point of the reopen.
          for (let tick = 0; tick < i; tick++) await new Promise((resolve) => setTimeout(resolve, 0));
          const deleted = await suite.store.delete(child, [...FINISHED_STATUSES]);
          return { reopened: await reopening, deleted, child: await suite.store.get(child) };
        }),
      );
      for (const { reopened, deleted, child } of outcomes) {
        expect(reopened && deleted).toBe(false);
        if (reopened) expect(child).not.toBeNull();
      }
    });

    it('reopen: of concurrent reopens exactly one lands', async () => {
      const s = testScope();
      await ended(s.id('a'), s.workflow);
      const results = await Promise.all(
        range(10).map((i) =>
          suite.store.reopen(s.id('a'), {
            expect: { status: 'cancelled', runs: 1 },
            status: 'pending',
            error: null,
            entries: [journalEntry(`retry-${i}`)],
            now: T + 100 + i,
          }),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      const after = await details(suite.store, s.id('a'));
      expect(after.updatedAt).toBe(T + 100 + winner);
      expect(after.journal!.map((e) => e.name)).toEqual(['step-1', 'step-2', `retry-${winner}`]);
    });
  });
}
