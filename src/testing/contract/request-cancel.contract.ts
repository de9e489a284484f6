import { FINISHED_STATUSES, UNFINISHED_STATUSES, type WorkflowStatus } from '../../storage/workflow-instance.js';
import {
  BASE_TIME as T,
  claimRequest,
  details,
  journalEntry,
  lease,
  newInstance,
  range,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `requestCancel`: which instances a cancel or a terminate applies to, what it changes, and that of concurrent requests exactly one wins. */
export function requestCancelContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('requestCancel', () => {
    it('requestCancel: a cancel sets cancelRequested and cancelReason, makes the instance due now and sets updatedAt', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow, { wakeAt: T + 10_000 }));
      const before = await details(suite.store, s.id('a'));
      expect(
        await suite.store.requestCancel(s.id('a'), { reason: 'changed mind', now: T + 100, terminate: false }),
      ).toBe(true);
      expect(await details(suite.store, s.id('a'))).toEqual({
        ...before,
        cancelRequested: true,
        terminateRequested: false,
        cancelReason: 'changed mind',
        wakeAt: T + 100,
        updatedAt: T + 100,
      });
    });

    it('requestCancel: keeps an earlier wakeAt when the instance is already due', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow, { wakeAt: T + 50 }));
      expect(await suite.store.requestCancel(s.id('a'), { reason: null, now: T + 500, terminate: false })).toBe(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        wakeAt: T + 50,
        cancelReason: null,
        updatedAt: T + 500,
      });
    });

    it('requestCancel: a cancel applies to pending, running and suspended instances', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('pending'), `${s.workflow}-p`));
      await lease(suite.store, newInstance(s.id('running'), `${s.workflow}-r`));
      await settle(suite.store, newInstance(s.id('suspended'), `${s.workflow}-s`), 'suspended', { wakeAt: null });
      for (const name of ['pending', 'running', 'suspended']) {
        expect(await suite.store.requestCancel(s.id(name), { reason: name, now: T + 10, terminate: false })).toBe(true);
        expect(await details(suite.store, s.id(name))).toMatchObject({
          status: name,
          cancelRequested: true,
          cancelReason: name,
        });
      }
      expect((await details(suite.store, s.id('suspended'))).wakeAt).toBe(T + 10);
      expect((await details(suite.store, s.id('running'))).leaseToken).not.toBeNull();
    });

    it('requestCancel: a cancel is refused, changing nothing, for compensating and finished instances', async () => {
      const s = testScope();
      const statuses: WorkflowStatus[] = ['compensating', ...FINISHED_STATUSES];
      for (const status of statuses)
        await settle(suite.store, newInstance(s.id(status), `${s.workflow}-${status}`), status);
      for (const status of statuses) {
        const before = await snapshot(suite.store, s.id(status));
        expect(await suite.store.requestCancel(s.id(status), { reason: 'no', now: T + 10, terminate: false })).toBe(
          false,
        );
        expect(await snapshot(suite.store, s.id(status))).toEqual(before);
      }
    });

    it('requestCancel: a repeated cancel, or one of an unknown id, is refused and changes nothing', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      expect(await suite.store.requestCancel(s.id('a'), { reason: 'first', now: T + 10, terminate: false })).toBe(true);
      const before = await snapshot(suite.store, s.id('a'));
      expect(await suite.store.requestCancel(s.id('a'), { reason: 'second', now: T + 20, terminate: false })).toBe(
        false,
      );
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.requestCancel(s.id('missing'), { reason: null, now: T, terminate: false })).toBe(false);
      expect(await suite.store.requestCancel(s.id('missing'), { reason: null, now: T, terminate: true })).toBe(false);
      expect(await suite.store.get(s.id('missing'))).toBeNull();
    });

    it('requestCancel: a terminate sets both flags and the reason on pending, running, suspended and compensating instances', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('pending'), `${s.workflow}-p`));
      await lease(suite.store, newInstance(s.id('running'), `${s.workflow}-r`));
      await settle(suite.store, newInstance(s.id('suspended'), `${s.workflow}-s`), 'suspended');
      await settle(suite.store, newInstance(s.id('compensating'), `${s.workflow}-c`), 'compensating');
      for (const status of UNFINISHED_STATUSES) {
        const before = await details(suite.store, s.id(status));
        expect(await suite.store.requestCancel(s.id(status), { reason: 'stop', now: T + 10, terminate: true })).toBe(
          true,
        );
        expect(await details(suite.store, s.id(status))).toEqual({
          ...before,
          cancelRequested: true,
          terminateRequested: true,
          cancelReason: 'stop',
          wakeAt: before.wakeAt !== null && before.wakeAt <= T + 10 ? before.wakeAt : T + 10,
          updatedAt: T + 10,
        });
      }
    });

    it('requestCancel: a terminate is refused, changing nothing, for finished instances and when repeated', async () => {
      const s = testScope();
      for (const status of FINISHED_STATUSES)
        await settle(suite.store, newInstance(s.id(status), `${s.workflow}-${status}`), status);
      await suite.store.create(newInstance(s.id('twice'), s.workflow));
      expect(await suite.store.requestCancel(s.id('twice'), { reason: 'first', now: T + 5, terminate: true })).toBe(
        true,
      );
      for (const id of [...FINISHED_STATUSES, 'twice'].map(s.id)) {
        const before = await snapshot(suite.store, id);
        expect(await suite.store.requestCancel(id, { reason: 'again', now: T + 10, terminate: true })).toBe(false);
        expect(await snapshot(suite.store, id)).toEqual(before);
      }
    });

    it('requestCancel: a terminate is accepted after a cancel, and a cancel is refused after a terminate', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      await suite.store.create(newInstance(s.id('b'), s.workflow));
      expect(await suite.store.requestCancel(s.id('a'), { reason: 'cancel', now: T + 1, terminate: false })).toBe(true);
      expect(await suite.store.requestCancel(s.id('a'), { reason: 'terminate', now: T + 2, terminate: true })).toBe(
        true,
      );
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        cancelRequested: true,
        terminateRequested: true,
        cancelReason: 'terminate',
      });
      expect(await suite.store.requestCancel(s.id('b'), { reason: 'terminate', now: T + 1, terminate: true })).toBe(
        true,
      );
      const before = await snapshot(suite.store, s.id('b'));
      expect(await suite.store.requestCancel(s.id('b'), { reason: 'cancel', now: T + 2, terminate: false })).toBe(
        false,
      );
      expect(await snapshot(suite.store, s.id('b'))).toEqual(before);
    });

    it('requestCancel: of concurrent cancels of one instance exactly one is accepted', async () => {
      const s = testScope();
      await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const accepted = await Promise.all(
        range(10).map((i) => suite.store.requestCancel(s.id('a'), { reason: `r${i}`, now: T + i, terminate: false })),
      );
      expect(accepted.filter(Boolean)).toHaveLength(1);
      const winner = accepted.indexOf(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        cancelRequested: true,
        cancelReason: `r${winner}`,
        updatedAt: T + winner,
      });
    });

    it('requestCancel: a cancel or terminate racing a suspending write always leaves the instance due (48 rounds)', async () => {
      const s = testScope();
      for (const round of range(48)) {
        const id = s.id(`r${round}`);
        const workflow = `${s.workflow}-${round}`;
        const { token, cursor } = await lease(suite.store, newInstance(id, workflow));
        // Rounds vary the start order, waits or none (a SQL store may write those two differently), cancel or terminate.
        const waits = Math.floor(round / 2) % 2 === 1 ? [{ name: s.signal(`r${round}`), key: null }] : [];
        const terminate = Math.floor(round / 4) % 2 === 1;
        const cancel = () => suite.store.requestCancel(id, { reason: 'stop', now: T + 10, terminate });
        const suspend = () =>
          suite.store.write(id, token, {
            now: T + 10,
            entries: [journalEntry('step-1')],
            status: 'suspended',
            release: { wakeAt: T + 60_000, waits, signalCursor: cursor },
          });
        const [accepted, wrote] =
          round % 2 === 0
            ? await Promise.all([cancel(), suspend()])
            : await Promise.all([suspend(), cancel()]).then(([w, c]) => [c, w] as const);
        expect(accepted).toBe(true);
        expect(wrote).toBe(true);
        expect(await details(suite.store, id), `round ${round}`).toMatchObject({
          status: 'suspended',
          cancelRequested: true,
          terminateRequested: terminate,
          leaseToken: null,
          wakeAt: T + 10,
        });
        const claim = await suite.store.claim(claimRequest(workflow, { now: T + 10 }));
        expect(
          claim.instances.map((i) => i.id),
          `round ${round}`,
        ).toEqual([id]);
      }
    });

    it('requestCancel: of concurrent terminates of one instance exactly one is accepted', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'compensating');
      const accepted = await Promise.all(
        range(10).map((i) => suite.store.requestCancel(s.id('a'), { reason: `r${i}`, now: T + i, terminate: true })),
      );
      expect(accepted.filter(Boolean)).toHaveLength(1);
      expect((await details(suite.store, s.id('a'))).cancelReason).toBe(`r${accepted.indexOf(true)}`);
    });
  });
}
