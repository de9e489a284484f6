import { FINISHED_STATUSES, UNFINISHED_STATUSES } from '../../storage/workflow-instance.js';
import {
  BASE_TIME as T,
  details,
  journalEntry,
  lease,
  newInstance,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `delete`: a finished instance goes with everything it owns; an unfinished one, or a child of one, is refused. */
export function deleteContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('delete', () => {
    it('delete: deletes an instance whose status is listed, with its journal and waits', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'completed', {
        waits: [{ name: s.signal('n'), key: null }],
      });
      expect(await suite.store.delete(s.id('a'), ['failed', 'completed'])).toBe(true);
      expect(await suite.store.get(s.id('a'))).toBeNull();
      expect(await suite.store.list({ workflow: s.workflow, limit: 10, offset: 0 })).toEqual([]);
      const again = await suite.store.create(newInstance(s.id('a'), s.workflow, { now: T + 10 }));
      expect(again.created).toBe(true);
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'pending',
        waits: [],
        journal: [],
        createdAt: T + 10,
      });
    });

    it('delete: refuses, changing nothing, when the status is not listed or the id is unknown', async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'failed');
      const before = await snapshot(suite.store, s.id('a'));
      expect(await suite.store.delete(s.id('a'), ['completed', 'cancelled'])).toBe(false);
      expect(await suite.store.delete(s.id('a'), [])).toBe(false);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.delete(s.id('missing'), [...FINISHED_STATUSES, ...UNFINISHED_STATUSES])).toBe(false);
    });

    it('delete: refuses a finished child while its parent exists unfinished, and deletes it once the parent ended or is gone', async () => {
      const s = testScope();
      const [parent, child, orphan] = ['parent', 'child', 'orphan'].map(s.id) as [string, string, string];
      await settle(suite.store, newInstance(parent, `${s.workflow}-p`), 'suspended', { wakeAt: T + 10 });
      await settle(suite.store, newInstance(child, `${s.workflow}-c`, { parentId: parent, now: T + 1 }), 'completed');
      await settle(
        suite.store,
        newInstance(orphan, `${s.workflow}-c`, { parentId: s.id('missing'), now: T + 1 }),
        'failed',
      );
      const before = await snapshot(suite.store, child);
      expect(await suite.store.delete(child, [...FINISHED_STATUSES])).toBe(false);
      expect(await snapshot(suite.store, child)).toEqual(before);
      expect(await suite.store.delete(orphan, [...FINISHED_STATUSES])).toBe(true);
      await settle(suite.store, newInstance(parent, `${s.workflow}-p`, { now: T + 10 }), 'completed');
      expect(await suite.store.delete(child, [...FINISHED_STATUSES])).toBe(true);
      expect(await suite.store.get(child)).toBeNull();
      expect((await details(suite.store, parent)).status).toBe('completed');
    });

    it('delete: a lease holder finds the instance gone: its write and renew change nothing', async () => {
      const s = testScope();
      const { token } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
      expect(await suite.store.delete(s.id('a'), ['running'])).toBe(true);
      expect(await suite.store.renew(s.id('a'), token, T + 60_000)).toBeNull();
      expect(
        await suite.store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('x')], status: 'completed' }),
      ).toBe(false);
      expect(await suite.store.get(s.id('a'))).toBeNull();
    });
  });
}
