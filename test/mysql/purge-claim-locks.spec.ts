// purge() on MariaDB/MySQL must never lock an unfinished instance: a claim passes over the rows
// another statement holds (FOR UPDATE SKIP LOCKED) until its next poll, so a purge that held a due
// instance would delay it by a poll. Deterministic: the store's executor holds purge's delete of
// instances (or of signals) open after it ran (its locks taken, not yet committed), a claim runs
// then, and only afterwards the purge commits. The table is small (where the optimizer reads whole
// tables rather than descend an index), due instances sit beside the finished ones, and a finished
// parent is reopened (as retry() does) between purge's read of what to delete and its delete: its
// finished child, and the child's end, must stay, and the reopened parent is due at once.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import mysql from 'mysql2/promise';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { FINISHED_STATUSES } from '../../src/storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../../src/storage/workflow-store-signals.js';
import { BASE_TIME as T, claimRequest, newInstance, newSignal, testScope } from '../../src/testing/store-fixtures.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';

const available = await requireMysql('purge() against a claim');

/** Purge's reads of what to delete, and its deletes (each of which reads instances too). */
const PURGE = {
  instances: { read: /^\s*SELECT id FROM \(/, deletes: /^\s*DELETE\b[^;]*?\bFROM\s+`[^`]+_instances`/i },
  signals: { read: /^\s*SELECT g\.id FROM/, deletes: /^\s*DELETE\b[^;]*?\bFROM\s+`[^`]+_signals`/i },
};

interface Hold {
  /** Resolves once purge's delete ran and its transaction waits to commit. */
  reached: Promise<void>;
  release(): void;
}

interface Armed {
  what: (typeof PURGE)[keyof typeof PURGE];
  /** Runs right after purge's read of what to delete returned, before the delete. */
  between: () => Promise<void>;
  reached(): void;
  released: Promise<void>;
  /** Whether the delete is reached (the hold is taken then). */
  taken: boolean;
}

/**
 * `executor`, whose purge (once armed) runs `between` after its read of the rows to delete, then
 * holds its delete open before it commits: a delete sent alone runs in a transaction of its own at
 * the session's level (as it would have run on its own), a delete inside a transaction holds that
 * transaction.
 */
function holding(executor: SqlExecutor) {
  let armed: Armed | null = null;
  const hold = async (sql: string) => {
    const current = armed;
    if (!current || current.taken || !current.what.deletes.test(sql)) return false;
    current.taken = true;
    armed = null;
    current.reached();
    await current.released;
    return true;
  };
  const afterRead = async (sql: string) => {
    if (armed && !armed.taken && armed.what.read.test(sql)) await armed.between();
  };
  const wrapped: SqlExecutor = {
    ...executor,
    async query(sql, params, options) {
      if (armed && !armed.taken && armed.what.deletes.test(sql)) {
        return executor.transaction(
          async (tx) => {
            const result = await tx.query(sql, params, options);
            await hold(sql);
            return result;
          },
          { isolation: 'session' },
        );
      }
      const result = await executor.query(sql, params, options);
      await afterRead(sql);
      return result;
    },
    transaction: (fn, options) =>
      executor.transaction(async (tx) => {
        let deleted: string | null = null;
        const watched: SqlExecutor = {
          ...tx,
          async query(sql, params, queryOptions) {
            const result = await tx.query(sql, params, queryOptions);
            if (armed?.what.deletes.test(sql)) deleted = sql;
            await afterRead(sql);
            return result;
          },
        };
        const result = await fn(watched);
        if (deleted) await hold(deleted);
        return result;
      }, options),
  };
  return {
    executor: wrapped,
    holdNextPurge(what: keyof typeof PURGE, between: () => Promise<void>): Hold {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      armed = { what: PURGE[what], between, reached, released, taken: false };
      return { reached: reachedPromise, release };
    },
  };
}

describe.skipIf(!available)('MySqlWorkflowStore: purge() beside a claim', () => {
  let pool: mysql.Pool;
  let schema: string;
  let control: ReturnType<typeof holding>;
  let purging: MySqlWorkflowStore;
  let claiming: MySqlWorkflowStore;

  // A fresh small table for each test: the plans a tiny table gets are the ones that scan it.
  beforeEach(async () => {
    schema = freshPrefix('purgeclaim');
    pool = createMysqlPool({ connectionLimit: 8 });
    control = holding(fromMysql2(pool));
    purging = new MySqlWorkflowStore({ executor: control.executor, schema });
    claiming = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
    await purging.init();
    await claiming.init();
  });
  afterEach(async () => {
    await purging?.close();
    await claiming?.close();
    if (pool) {
      await dropTables(pool, schema);
      await pool.end();
    }
  });

  const monthAgo = T - 30 * 86_400_000;
  const table = () => `\`${schema}_instances\``;

  for (const what of ['instances', 'signals'] as const) {
    it(`a claim while purge() is deleting ${what} takes every due instance: beside finished ones, and a parent reopened since purge's read`, async () => {
      const s = testScope();
      const parent = newInstance(s.id('parent'), s.workflow, { now: T - 5_000 });
      const child = newInstance(s.id('parent/c'), s.workflow, { now: T - 4_000, parentId: parent.id });
      const beside = newInstance(s.id('beside'), s.workflow, { now: T - 1_000 });
      const finished = ['f1', 'f2', 'f3'].map((name) => newInstance(s.id(name), s.workflow, { now: T - 3_000 }));
      for (const init of [parent, child, beside, ...finished]) await claiming.create(init);
      // Everything but `beside` ended a month ago; the child's end was sent then.
      await pool.query(`UPDATE ${table()} SET status = 'completed', wake_at = NULL, updated_at = ? WHERE id <> ?`, [
        monthAgo,
        beside.id,
      ]);
      for (const key of [beside.id, finished[0]!.id, null])
        await claiming.signal(newSignal(s.signal('old'), { key, now: monthAgo }));
      await claiming.signal(newSignal(CHILD_ENDED_SIGNAL, { key: child.id, now: monthAgo }));
      await claiming.signal(newSignal(s.signal('new'), { now: T }));
      const before = T - 86_400_000;
      // For signals, a purge of failed instances alone (none are): the parent and its child stay for the signals' part.
      const statuses = what === 'instances' ? [...FINISHED_STATUSES] : (['failed'] as const);

      // The parent is reopened (its row as retry() leaves it: pending, due now) after purge read what to delete.
      const reopen = () =>
        pool.query(`UPDATE ${table()} SET status = 'pending', wake_at = ?, updated_at = ? WHERE id = ?`, [
          T - 10,
          T - 10,
          parent.id,
        ]);
      const hold = control.holdNextPurge(what, async () => void (await reopen()));
      const purge = purging.purge({ statuses: [...statuses], before, limit: 100 });
      purge.catch(() => undefined);
      await hold.reached;
      let claimed: string[];
      try {
        const claim = claiming.claim(claimRequest(s.workflow, { now: T, limit: 10 }));
        const timeout = new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('The claim waited for the purge (a lock on a row it reads).')), 10_000),
        );
        claimed = (await Promise.race([claim, timeout])).instances.map((instance) => instance.id).sort();
      } finally {
        hold.release();
      }
      expect(claimed).toEqual([beside.id, parent.id].sort());
      expect(await purge).toMatchObject(what === 'instances' ? { instances: 3 } : { instances: 0, signals: 3 });
      for (const init of finished)
        expect(await claiming.get(init.id)).toEqual(what === 'instances' ? null : expect.anything());
      // The reopened parent's child stays, and its end: the parent may still take it.
      expect(await claiming.get(child.id)).toMatchObject({ status: 'completed' });
      expect(
        await claiming.signals({
          name: CHILD_ENDED_SIGNAL,
          key: child.id,
          afterId: 0,
          upToId: Number.MAX_SAFE_INTEGER,
        }),
      ).toHaveLength(1);
    });
  }
});
