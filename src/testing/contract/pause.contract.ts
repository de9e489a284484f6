import {
  BASE_TIME as T,
  claimRequest,
  details,
  idsOf,
  journalEntry,
  lease,
  newInstance,
  newSignal,
  range,
  settle,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * `pause`, `resume`, `pauseWorkflow`, `resumeWorkflow`: what reads show, that no claim takes what
 * is paused, that the lease holder's writes can't undo a pause (and hear of it), and the races of a
 * pause with a claim and of a resume with a cancel.
 */
export function pauseContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('pause', () => {
    it('pause: an unfinished instance reads as paused with its reason; its wake-up and journal stay; a second pause changes nothing', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'suspended', { wakeAt: T + 5_000 });
      const before = await details(suite.store, s.id('a'));
      expect(await suite.store.pause(s.id('a'), { reason: 'bad deploy', now: T + 100 })).toBe(true);
      expect(await details(suite.store, s.id('a'))).toEqual({
        ...before,
        status: 'paused',
        pauseReason: 'bad deploy',
        updatedAt: T + 100,
      });
      expect(await suite.store.pause(s.id('a'), { reason: 'again', now: T + 200 })).toBe(false);
      expect(await details(suite.store, s.id('a'))).toMatchObject({ pauseReason: 'bad deploy', updatedAt: T + 100 });
    });

    it('pause: a finished or unknown instance is not paused; resume of one that is not paused changes nothing', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('done'), s.workflow), 'completed');
      const done = await details(suite.store, s.id('done'));
      expect(await suite.store.pause(s.id('done'), { reason: null, now: T + 1 })).toBe(false);
      expect(await suite.store.pause(s.id('unknown'), { reason: null, now: T + 1 })).toBe(false);
      expect(await suite.store.resume(s.id('done'), T + 2)).toBe(false);
      expect(await details(suite.store, s.id('done'))).toEqual(done);
      await suite.store.create(newInstance(s.id('pending'), s.workflow));
      const pending = await details(suite.store, s.id('pending'));
      expect(await suite.store.resume(s.id('pending'), T + 2)).toBe(false);
      expect(await details(suite.store, s.id('pending'))).toEqual(pending);
    });

    it('pause: no claim takes a paused instance, nor counts it due; resume leaves its wake-up, so what fell due meanwhile is due at once', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow, { wakeAt: T + 1_000 }));
      await suite.store.create(newInstance(s.id('b'), s.workflow, { wakeAt: T + 1_000 }));
      expect(await suite.store.pause(s.id('a'), { reason: null, now: T })).toBe(true);
      const later = T + 60_000;
      expect(await suite.store.countDue?.(later, 1_000)).toBeGreaterThanOrEqual(1);
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: later }));
      expect(idsOf(claim)).toEqual([s.id('b')]);
      expect(await suite.store.resume(s.id('a'), later + 1)).toBe(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'pending',
        wakeAt: T + 1_000,
        updatedAt: later + 1,
      });
      expect((await details(suite.store, s.id('a'))).pauseReason ?? null).toBeNull();
      const again = await suite.store.claim(claimRequest(s.workflow, { now: later + 2 }));
      expect(idsOf(again)).toEqual([s.id('a')]);
    });

    it('pause: countDue leaves paused instances out', async () => {
      const s = testScope();
      const now = T - 3_600_000 - Math.floor(Math.random() * 1_000_000);
      // Instances due before anything else the shared store holds: counted with a cap above them.
      await suite.store.create(newInstance(s.id('a'), s.workflow, { now, wakeAt: now }));
      const before = (await suite.store.countDue?.(now, 1_000_000)) ?? null;
      if (before === null) return;
      await suite.store.pause(s.id('a'), { reason: null, now });
      expect(await suite.store.countDue!(now, 1_000_000)).toBe(before - 1);
    });

    it('pause: list() filters by the status reads show (paused, or the stored status of what is not paused)', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      await suite.store.create(newInstance(s.id('b'), s.workflow));
      await suite.store.pause(s.id('a'), { reason: 'look', now: T });
      const ids = async (status: Parameters<typeof suite.store.list>[0]['status']) =>
        (await suite.store.list({ workflow: s.workflow, status, limit: 10, offset: 0 })).map((i) => i.id);
      expect(await ids(['paused'])).toEqual([s.id('a')]);
      expect(await ids(['pending'])).toEqual([s.id('b')]);
      expect(await ids(['pending', 'paused'])).toEqual([s.id('a'), s.id('b')]);
      const [paused] = await suite.store.list({ workflow: s.workflow, status: ['paused'], limit: 10, offset: 0 });
      expect(paused).toMatchObject({ status: 'paused', pauseReason: 'look' });
    });

    it('pause: the holder of the lease hears it at its renewal; its writes land (a finished step is recorded) and leave it paused; resume shows what it wrote', async () => {
      const s = testScope();
      const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      expect(await suite.store.pause(s.id('a'), { reason: 'hold', now: T + 10 })).toBe(true);
      expect(await suite.store.renew(s.id('a'), token, T + 40_000)).toMatchObject({
        cancelRequested: false,
        terminateRequested: false,
        paused: true,
      });
      expect(
        await suite.store.write(s.id('a'), token, {
          now: T + 20,
          entries: [journalEntry('charge')],
          status: 'suspended',
          release: { wakeAt: T + 9_000, waits: [], signalCursor: cursor },
        }),
      ).toBe(true);
      const paused = await details(suite.store, s.id('a'));
      expect(paused).toMatchObject({ status: 'paused', leaseToken: null, wakeAt: T + 9_000 });
      expect(paused.journal!.map((e) => e.name)).toEqual(['charge']);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 60_000 })))).toEqual([]);
      expect(await suite.store.resume(s.id('a'), T + 60_001)).toBe(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({ status: 'suspended', wakeAt: T + 9_000 });
    });

    it('pause: a write that ends the instance wins over a pause that came too late (reads show the end)', async () => {
      const s = testScope();
      const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      await suite.store.pause(s.id('a'), { reason: null, now: T + 10 });
      await suite.store.write(s.id('a'), token, {
        now: T + 20,
        entries: [],
        status: 'completed',
        output: { ok: true },
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
      expect(await details(suite.store, s.id('a'))).toMatchObject({ status: 'completed', output: { ok: true } });
      expect(await suite.store.resume(s.id('a'), T + 30)).toBe(false);
      expect(await suite.store.pause(s.id('a'), { reason: null, now: T + 30 })).toBe(false);
    });

    it('pause: a signal sent while paused is kept for the instance, which is due at resume', async () => {
      const s = testScope();
      const wait = { name: s.signal('go'), key: null };
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'suspended', { wakeAt: null, waits: [wait] });
      await suite.store.pause(s.id('a'), { reason: null, now: T + 1 });
      await suite.store.signal(newSignal(wait.name, { now: T + 2 }));
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 3 })))).toEqual([]);
      await suite.store.resume(s.id('a'), T + 4);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 5 })))).toEqual([s.id('a')]);
    });

    it('pause: a cancel or terminate of a paused instance ends the pause and makes it due', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('c'), s.workflow), 'suspended', { wakeAt: null });
      await settle(suite.store, newInstance(s.id('t'), `${s.workflow}-t`), 'suspended', { wakeAt: null });
      await suite.store.pause(s.id('c'), { reason: null, now: T + 1 });
      await suite.store.pause(s.id('t'), { reason: null, now: T + 1 });
      expect(await suite.store.requestCancel(s.id('c'), { reason: 'stop', now: T + 2, terminate: false })).toBe(true);
      expect(await suite.store.requestCancel(s.id('t'), { reason: 'stop', now: T + 2, terminate: true })).toBe(true);
      expect(await details(suite.store, s.id('c'))).toMatchObject({
        status: 'suspended',
        cancelRequested: true,
        wakeAt: T + 2,
      });
      expect(await details(suite.store, s.id('t'))).toMatchObject({ status: 'suspended', terminateRequested: true });
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 3 })))).toEqual([s.id('c')]);
    });

    it('pause: racing a claim, the instance is either claimed (and the holder hears the pause) or passed over', async () => {
      for (const i of range(6)) {
        const s = testScope();
        await suite.store.create(newInstance(s.id(`a${i}`), s.workflow));
        const request = claimRequest(s.workflow, { now: T + 1 });
        const [claim, paused] = await Promise.all([
          suite.store.claim(request),
          suite.store.pause(s.id(`a${i}`), { reason: null, now: T + 1 }),
        ]);
        expect(paused).toBe(true);
        expect(await details(suite.store, s.id(`a${i}`))).toMatchObject({ status: 'paused' });
        if (claim.instances.length === 1) {
          expect(await suite.store.renew(s.id(`a${i}`), request.token, T + 50_000)).toMatchObject({ paused: true });
        } else {
          expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 2 })))).toEqual([]);
        }
      }
    });

    it('pause: racing a cancel, a resume leaves the instance unpaused with the cancel stored, due now', async () => {
      for (const i of range(6)) {
        const s = testScope();
        await settle(suite.store, newInstance(s.id(`a${i}`), s.workflow), 'suspended', { wakeAt: null });
        await suite.store.pause(s.id(`a${i}`), { reason: null, now: T + 1 });
        const [resumed, cancelled] = await Promise.all([
          suite.store.resume(s.id(`a${i}`), T + 2),
          suite.store.requestCancel(s.id(`a${i}`), { reason: 'x', now: T + 2, terminate: false }),
        ]);
        expect(cancelled).toBe(true);
        // The cancel ended the pause already when it landed first: the resume then found nothing to resume.
        expect(typeof resumed).toBe('boolean');
        expect(await details(suite.store, s.id(`a${i}`))).toMatchObject({
          status: 'suspended',
          cancelRequested: true,
          wakeAt: T + 2,
        });
        expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 3 })))).toEqual([s.id(`a${i}`)]);
      }
    });
  });

  describe('pauseWorkflow', () => {
    it('pauseWorkflow: no claim takes an instance of a paused workflow, any version, until resumed; starts still land', async () => {
      const s = testScope();
      const workflows = [
        { name: s.workflow, version: 1 },
        { name: s.workflow, version: 2 },
      ];
      await suite.store.create(newInstance(s.id('v1'), s.workflow));
      expect(await suite.store.pauseWorkflow({ workflow: s.workflow, version: null }, { reason: 'fix', now: T })).toBe(
        true,
      );
      expect(
        await suite.store.pauseWorkflow({ workflow: s.workflow, version: null }, { reason: 'other', now: T + 1 }),
      ).toBe(false);
      expect((await suite.store.create(newInstance(s.id('v2'), s.workflow, { version: 2 }))).created).toBe(true);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 5, workflows })))).toEqual([]);
      expect((await suite.store.pausedWorkflows()).filter((p) => p.workflow === s.workflow)).toEqual([
        { workflow: s.workflow, version: null, reason: 'fix', pausedAt: T },
      ]);
      expect(await suite.store.resumeWorkflow({ workflow: s.workflow, version: null })).toBe(true);
      expect(await suite.store.resumeWorkflow({ workflow: s.workflow, version: null })).toBe(false);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 6, workflows })))).toEqual([
        s.id('v1'),
        s.id('v2'),
      ]);
    });

    it('pauseWorkflow: a pause of one version holds back that version only', async () => {
      const s = testScope();
      const workflows = [
        { name: s.workflow, version: 1 },
        { name: s.workflow, version: 2 },
      ];
      await suite.store.create(newInstance(s.id('v1'), s.workflow));
      await suite.store.create(newInstance(s.id('v2'), s.workflow, { version: 2 }));
      await suite.store.pauseWorkflow({ workflow: s.workflow, version: 2 }, { reason: null, now: T });
      expect(await suite.store.countDue?.(T + 5, 1_000_000)).toBeGreaterThanOrEqual(1);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 5, workflows })))).toEqual([s.id('v1')]);
      // Resuming every version lifts no pause of a single one.
      expect(await suite.store.resumeWorkflow({ workflow: s.workflow, version: null })).toBe(false);
      expect(await suite.store.resumeWorkflow({ workflow: s.workflow, version: 2 })).toBe(true);
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 6, workflows })))).toEqual([s.id('v2')]);
    });

    it('pauseWorkflow: once it resolves, claims running beside it take nothing of the workflow', async () => {
      const s = testScope();
      for (const i of range(20)) await suite.store.create(newInstance(s.id(`i${i}`), s.workflow));
      const claims = range(4).map(() => suite.store.claim(claimRequest(s.workflow, { now: T + 1, limit: 1 })));
      await suite.store.pauseWorkflow({ workflow: s.workflow, version: 1 }, { reason: null, now: T + 1 });
      await Promise.all(claims);
      const after = await Promise.all(
        range(4).map(() => suite.store.claim(claimRequest(s.workflow, { now: T + 2, limit: 5 }))),
      );
      expect(after.flatMap((claim) => claim.instances)).toEqual([]);
    });
  });
}
