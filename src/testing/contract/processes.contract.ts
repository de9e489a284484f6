import { BASE_TIME as T, testScope } from '../store-fixtures.js';
import type { WorkflowProcessRecord } from '../../storage/workflow-store-processes.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * The worker processes' records (optional `WorkflowProcessStore`): what each live process declares,
 * refreshed by an upsert, removed on a clean shutdown, and a crashed one's row passed over once
 * stale, then removed by another process's record.
 */
export function processesContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;

  const record = (id: string, overrides: Partial<WorkflowProcessRecord> = {}): WorkflowProcessRecord => ({
    id,
    owner: `worker ${id}`,
    host: 'host-a',
    pid: 4242,
    declared: [{ workflow: 'orders.fulfil', version: 1 }],
    startedAt: T,
    seenAt: T,
    ...overrides,
  });

  describe('processes', () => {
    it('recordProcess: stores the record whole, replaces it on the next beat, and removeProcess removes it once', async () => {
      const store = suite.store;
      if (!store.recordProcess || !store.removeProcess || !store.processes) return; // optional
      const s = testScope();
      // Other tests' processes may be live in a shared store: look at this test's.
      const ours = async (seenSince: number) =>
        (await store.processes!(seenSince)).filter((row) => row.id.startsWith(s.prefix));

      const first = record(s.id('p1'), {
        owner: 'host-a:4242:ab12cd34',
        declared: [
          { workflow: 'orders.fulfil', version: 1 },
          { workflow: 'orders.fulfil', version: 2 },
          { workflow: 'invoices.send', version: 3 },
        ],
        startedAt: T + 10,
        seenAt: T + 10,
      });
      await store.recordProcess(first, T);
      expect(await ours(T)).toEqual([first]);

      // The next beat: the same id, a later seenAt (and, after a reload, what it declares now).
      const beat = { ...first, declared: [{ workflow: 'orders.fulfil', version: 2 }], seenAt: T + 20_000 };
      await store.recordProcess(beat, T);
      expect(await ours(T)).toEqual([beat]);

      expect(await store.removeProcess(first.id)).toBe(true);
      expect(await ours(T)).toEqual([]);
      expect(await store.removeProcess(first.id)).toBe(false);
    });

    it('processes: lists the processes seen since, by startedAt then id, each with the versions it declares', async () => {
      const store = suite.store;
      if (!store.recordProcess || !store.removeProcess || !store.processes) return;
      const s = testScope();
      const ours = async (seenSince: number) =>
        (await store.processes!(seenSince)).filter((row) => row.id.startsWith(s.prefix));
      const old = record(s.id('b-old'), { declared: [{ workflow: 'orders.fulfil', version: 1 }], startedAt: T + 1 });
      const upgraded = record(s.id('a-new'), {
        host: 'host-b',
        pid: 7,
        declared: [{ workflow: 'orders.fulfil', version: 2 }],
        startedAt: T + 1,
      });
      const later = record(s.id('0-later'), { declared: [], startedAt: T + 2 });
      await Promise.all([old, upgraded, later].map((row) => store.recordProcess!(row, T)));

      // Same start: by id ("a-new" before "b-old"), then the later start.
      expect(await ours(T)).toEqual([upgraded, old, later]);

      // One stops beating: from when it is stale, it is left out, though still stored.
      await store.recordProcess({ ...upgraded, seenAt: T + 60_000 }, T);
      await store.recordProcess({ ...later, seenAt: T + 60_000 }, T);
      expect((await ours(T + 30_000)).map((row) => row.id)).toEqual([upgraded.id, later.id]);
      expect((await ours(T)).map((row) => row.id)).toEqual([upgraded.id, old.id, later.id]);
      for (const row of [old, upgraded, later]) await store.removeProcess(row.id);
    });

    it('recordProcess: removes the rows not seen since staleBefore (a crashed process), never its own; a removed one comes back at its next beat', async () => {
      const store = suite.store;
      if (!store.recordProcess || !store.removeProcess || !store.processes) return;
      const s = testScope();
      const ours = async () => (await store.processes!(0)).filter((row) => row.id.startsWith(s.prefix));
      const crashed = record(s.id('crashed'), { seenAt: T + 5 });
      const stalled = record(s.id('stalled'), { seenAt: T + 6 });
      const live = record(s.id('live'), { seenAt: T + 10 });
      await store.recordProcess(crashed, 0);
      await store.recordProcess(stalled, 0);
      await store.recordProcess(live, 0);
      expect((await ours()).map((row) => row.id).sort()).toEqual([crashed.id, live.id, stalled.id].sort());

      // The live one beats again, with every row not seen since T + 7 stale: both others go.
      const beat = { ...live, seenAt: T + 100_000 };
      await store.recordProcess(beat, T + 7);
      expect(await ours()).toEqual([beat]);

      // The stalled one wakes up and beats: its row is back, whole.
      const back = { ...stalled, seenAt: T + 100_001 };
      await store.recordProcess(back, T + 7);
      expect((await ours()).map((row) => row.id).sort()).toEqual([live.id, stalled.id].sort());
      expect((await ours()).find((row) => row.id === stalled.id)).toEqual(back);
      for (const row of [live, stalled]) await store.removeProcess(row.id);
    });
  });
}
