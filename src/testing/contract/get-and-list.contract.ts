import type { WorkflowStore } from '../../storage/workflow-store.js';
import { BASE_TIME as T, details, journalEntry, lease, newInstance, settle, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `get` and `list`: what a read returns, the filters, the order and the paging. */
export function getAndListContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('get and list', () => {
    it('get: returns null for an unknown id', async () => {
      expect(await suite.store.get(testScope().id('missing'))).toBeNull();
      expect(await suite.store.get(testScope().id('missing'), { journal: true })).toBeNull();
    });

    it('get: returns waits [] and no journal unless asked; an empty journal when asked', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const plain = await suite.store.get(s.id('a'));
      expect(plain!.waits).toEqual([]);
      expect(plain!.journal).toBeUndefined();
      expect((await suite.store.get(s.id('a'), { journal: true }))!.journal).toEqual([]);
    });

    it('get: returns the journal in first-write order, keeping null and absent fields apart', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const sleep = {
        name: 'nap',
        kind: 'sleep' as const,
        state: 'waiting' as const,
        wakeAt: null,
        createdAt: T,
        updatedAt: T,
      };
      const nothing = journalEntry('returns-null', { value: null });
      const failed = {
        name: 'charge',
        kind: 'step' as const,
        state: 'failed' as const,
        error: { name: 'PaymentError', message: 'declined', code: 42 },
        attempts: 3,
        createdAt: T,
        updatedAt: T + 1,
      };
      expect(await suite.store.write(s.id('a'), token, { now: T, entries: [sleep, nothing] })).toBe(true);
      expect(await suite.store.write(s.id('a'), token, { now: T + 1, entries: [failed] })).toBe(true);
      const journal = (await details(suite.store, s.id('a'))).journal!;
      expect(journal.map((e) => e.name)).toEqual(['nap', 'returns-null', 'charge']);
      expect(journal[0]).toEqual(sleep);
      expect(journal[0]!.wakeAt).toBeNull();
      expect('value' in journal[0]!).toBe(false);
      expect('error' in journal[0]!).toBe(false);
      expect(journal[1]!.value).toBeNull();
      expect('error' in journal[1]!).toBe(false);
      expect(journal[2]).toEqual(failed);
      expect('value' in journal[2]!).toBe(false);
    });

    it('list: filters by status (any of), workflow, version, parentId and scheduleId, all combined', async () => {
      const s = testScope();
      const [w, w2, parent, schedule] = [s.workflow, `${s.workflow}-2`, s.id('parent'), s.id('schedule')];
      await settle(suite.store, newInstance(s.id('a'), w, { parentId: parent, now: T + 1 }), 'completed');
      await settle(suite.store, newInstance(s.id('b'), w, { version: 2, parentId: parent, now: T + 2 }), 'failed');
      await suite.store.create(newInstance(s.id('c'), w2, { parentId: parent, scheduleId: schedule, now: T + 3 }));
      await lease(suite.store, newInstance(s.id('d'), w, { parentId: parent, now: T + 4 }));
      await suite.store.create(newInstance(s.id('e'), w, { scheduleId: schedule, now: T + 5 }));
      const ids = async (query: Partial<Parameters<WorkflowStore['list']>[0]>) =>
        (await suite.store.list({ limit: 100, offset: 0, ...query })).map((i) => i.id.slice(s.prefix.length + 1));

      expect(await ids({ parentId: parent })).toEqual(['a', 'b', 'c', 'd']);
      expect(await ids({ parentId: parent, status: ['completed', 'failed'] })).toEqual(['a', 'b']);
      expect(await ids({ parentId: parent, status: ['running'] })).toEqual(['d']);
      expect(await ids({ workflow: w })).toEqual(['a', 'b', 'd', 'e']);
      expect(await ids({ workflow: w, version: 2 })).toEqual(['b']);
      expect(await ids({ scheduleId: schedule })).toEqual(['c', 'e']);
      expect(await ids({ workflow: w, scheduleId: schedule, status: ['pending'] })).toEqual(['e']);
      expect(await ids({ parentId: parent, workflow: w2, status: ['pending'] })).toEqual(['c']);
      expect(await ids({ workflow: w, status: ['cancelled'] })).toEqual([]);
      const [listed] = await suite.store.list({ workflow: w, version: 2, limit: 1, offset: 0 });
      const { waits: _waits, journal: _journal, ...stored } = await details(suite.store, s.id('b'));
      expect(listed).toEqual(stored);
    });

    it('list: orders by createdAt, then id, and pages with limit and offset', async () => {
      const s = testScope();
      for (const [name, at] of [
        ['x0', 3],
        ['x2', 2],
        ['x3', 1],
        ['x1', 2],
      ] as const) {
        await suite.store.create(newInstance(s.id(name), s.workflow, { now: T + at }));
      }
      const page = async (limit: number, offset: number) =>
        (await suite.store.list({ workflow: s.workflow, limit, offset })).map((i) => i.id.slice(s.prefix.length + 1));
      expect(await page(100, 0)).toEqual(['x3', 'x1', 'x2', 'x0']);
      expect(await page(2, 0)).toEqual(['x3', 'x1']);
      expect(await page(2, 1)).toEqual(['x1', 'x2']);
      expect(await page(2, 3)).toEqual(['x0']);
      expect(await page(2, 4)).toEqual([]);
    });
  });
}
