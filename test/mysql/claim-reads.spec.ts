// What a claim reads on MariaDB, counted by the server (the session's Handler_read_* and the index
// entries index condition pushdown rejected): it grows with what the claim may take and with the
// groups (priority, concurrency key) it takes turns between, never with the instances that sleep
// behind them or the backlog of one key. Each case on a table of its own, filled with SQL as the store
// would have written the rows, with one connection so the store's statements and the counters share
// a session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type mysql from 'mysql2/promise';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { MIGRATIONS } from '../../src/mysql/migrations.generated.js';
import { migrationLabel } from '../../src/sql/migration-runner.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import type { WorkflowClaimRequest } from '../../src/storage/workflow-store.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql, useMysqlStore } from '../support/mysql.js';

const available = await requireMysql('claim reads');

const NOW = 1_900_000_000_000;
const DIGITS =
  '(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)';
/** n from 0 to 9999. */
const NUMBERS = `(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS n FROM ${DIGITS} a, ${DIGITS} b, ${DIGITS} c, ${DIGITS} e) numbers`;

function request(workflow: string, limit = 10): WorkflowClaimRequest {
  return {
    now: NOW,
    limit,
    workflows: [{ name: workflow, version: 1 }],
    owner: 'reads',
    token: `t-${Math.random()}`,
    leaseUntil: NOW + 30_000,
  };
}

/** The session's reads so far (SHOW STATUS's own reads are the same on every call, so they cancel in a difference). */
async function reads(pool: mysql.Pool): Promise<number> {
  const [rows] = await pool.query(
    "SHOW SESSION STATUS WHERE Variable_name LIKE 'Handler_read%' OR Variable_name LIKE 'Handler_icp_%'",
  );
  return (rows as Array<{ Variable_name: string; Value: string }>).reduce(
    (sum, row) => sum + (row.Variable_name === 'Handler_icp_match' ? -1 : 1) * Number(row.Value),
    0,
  );
}

/** Inserts `count` instances of `workflow` (`n` from 0): `columns` give priority, wake_at, created_at and concurrency_key as SQL of n. */
async function insert(
  pool: mysql.Pool,
  schema: string,
  workflow: string,
  count: number,
  columns: { prefix: string; status?: string; priority: string; wakeAt: string; createdAt: string; key: string },
): Promise<void> {
  await pool.query(
    `INSERT INTO \`${schema}_instances\` (id, workflow, version, status, signal_cursor, wait_topics, priority, wake_at, created_at, updated_at, concurrency_key)
SELECT CONCAT(?, n), ?, 1, ?, 0, '[]', ${columns.priority}, ${columns.wakeAt}, ${columns.createdAt}, ${columns.createdAt}, ${columns.key}
FROM ${NUMBERS} WHERE n < ?`,
    [columns.prefix, workflow, columns.status ?? 'suspended', count],
  );
  await pool.query(`ANALYZE TABLE \`${schema}_instances\``);
}

/** A claim and what it read. */
async function counted(fixture: { pool: mysql.Pool; store: MySqlWorkflowStore }, claim: WorkflowClaimRequest) {
  // Once first, so that the counted one measures a warm session (statistics read, statements prepared).
  await fixture.store.claim({ ...claim, now: NOW - 86_400_000, token: 'warm-up' });
  const before = await reads(fixture.pool);
  const { instances } = await fixture.store.claim(claim);
  return { ids: instances.map((instance) => instance.id), reads: (await reads(fixture.pool)) - before };
}

describe.skipIf(!available)('claim reads on MariaDB', () => {
  describe('beside 4,000 sleeping instances', () => {
    const fixture = useMysqlStore('claimreads', { beforeAll, afterAll }, 1);
    beforeAll(async () => {
      // Two priorities; a quarter of them under one of 10 keys, the rest without a key: 22 groups.
      await insert(fixture.pool, fixture.schema, 'w', 4000, {
        prefix: 'sleeping-',
        priority: 'n MOD 2',
        wakeAt: `${NOW} + 86400000 + n`,
        createdAt: `${NOW - 10_000} + n`,
        key: "IF(n MOD 4 = 0, CONCAT('k', n MOD 10), NULL)",
      });
    });

    it('a claim with nothing due reads a few index entries per group, none per sleeping instance', async () => {
      const { ids, reads: read } = await counted(fixture, request('w'));
      expect(ids).toEqual([]);
      // The loose scan's descents: about two per group (22 groups), and nothing else.
      expect(read).toBeLessThanOrEqual(60);
    });

    it('a claim with fewer due than its limit reads what it takes, not the sleeping instances behind them', async () => {
      await insert(fixture.pool, fixture.schema, 'w', 5, {
        prefix: 'due-',
        status: 'pending',
        priority: '0',
        wakeAt: `${NOW - 1000} + n`,
        createdAt: `${NOW - 1000} + n`,
        key: 'NULL',
      });
      const { ids, reads: read } = await counted(fixture, request('w'));
      expect(ids.sort()).toEqual(['due-0', 'due-1', 'due-2', 'due-3', 'due-4']);
      expect(read).toBeLessThanOrEqual(100);
    });
  });

  describe('at 100 keys with 2,000 due instances', () => {
    const fixture = useMysqlStore('claimreadskeys', { beforeAll, afterAll }, 1);
    beforeAll(async () => {
      // Key k<n mod 100>; instance n is due at NOW - 10,000 + n, so each key's oldest is n = key's number.
      await insert(fixture.pool, fixture.schema, 'w', 2000, {
        prefix: 'due-',
        status: 'pending',
        priority: '0',
        wakeAt: `${NOW - 10_000} + n`,
        createdAt: `${NOW - 10_000} + n`,
        key: "CONCAT('k', n MOD 100)",
      });
    });

    it("a claim of 10 takes the ten oldest keys' oldest instances, reading about one entry per key, not every due one", async () => {
      const { ids, reads: read } = await counted(fixture, request('w'));
      expect(ids.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `due-${i}`).sort());
      expect(read).toBeLessThanOrEqual(400);
    });
  });

  describe('migration 0011 on a store 0008 made', () => {
    let pool: mysql.Pool;
    const schema = freshPrefix('claimreadsmig');
    beforeAll(async () => {
      pool = createMysqlPool({ connectionLimit: 2 });
    });
    afterAll(async () => {
      await dropTables(pool, schema);
      await pool.end();
    });

    it('rebuilds instances_due_key without id on a table with instances, once, and the claim reads it', async () => {
      const executor = fromMysql2(pool);
      const altered: string[] = [];
      const recording = (inner: SqlExecutor): SqlExecutor => ({
        query: (sql, params, options) => {
          if (/^ALTER TABLE/.test(sql)) altered.push(sql);
          return inner.query(sql, params, options);
        },
        transaction: (fn, options) => inner.transaction((tx) => fn(recording(tx)), options),
      });
      const store = new MySqlWorkflowStore({ executor: recording(executor), schema });
      await store.migrate();
      // Back to the index 0008 made, with 0011 not recorded, as a schema of the previous version.
      await pool.query(
        `ALTER TABLE \`${schema}_instances\` DROP INDEX instances_due_key, ADD INDEX instances_due_key (claim_priority, concurrency_key, wake_at, created_at, id)`,
      );
      await pool.query(`DELETE FROM \`${schema}_migrations\` WHERE version = 11`);
      await insert(pool, schema, 'w', 300, {
        prefix: 'due-',
        status: 'pending',
        priority: '0',
        wakeAt: `${NOW - 10_000} + n`,
        createdAt: `${NOW - 10_000} + n`,
        key: "CONCAT('k', n MOD 3)",
      });
      const columns = async () => {
        const [rows] = await pool.query(
          `SELECT GROUP_CONCAT(column_name ORDER BY seq_in_index) AS c FROM information_schema.statistics
WHERE table_schema = DATABASE() AND table_name = ? AND index_name = 'instances_due_key'`,
          [`${schema}_instances`],
        );
        return (rows as Array<{ c: string }>)[0]!.c;
      };
      expect(await columns()).toBe('claim_priority,concurrency_key,wake_at,created_at,id');
      const eleventh = migrationLabel(MIGRATIONS.find((migration) => migration.version === 11)!);
      altered.length = 0;
      expect(await store.migrate()).toEqual([eleventh]);
      expect(altered).toHaveLength(1);
      expect(await columns()).toBe('claim_priority,concurrency_key,wake_at,created_at');
      // A run stopped after the statement and before its record: the runner finds the columns and
      // records it without building the index again.
      await pool.query(`DELETE FROM \`${schema}_migrations\` WHERE version = 11`);
      altered.length = 0;
      expect(await store.migrate()).toEqual([eleventh]);
      expect(altered).toEqual([]);
      expect(await columns()).toBe('claim_priority,concurrency_key,wake_at,created_at');
      await store.init();
      const claimed = await store.claim(request('w', 3));
      expect(claimed.instances.map((instance) => instance.id).sort()).toEqual(['due-0', 'due-1', 'due-2']);
      await store.close();
    });
  });
});
