// purge() runs as prepared statements, one batch after another, and PostgreSQL may settle on the
// generic plan of its batch statements after their first runs. Each batch takes `limit` ids found
// by key order; with that limit a parameter, a generic plan of `DELETE ... WHERE id IN (SELECT ...
// LIMIT $n)` joins them to every finished instance (or signal) before the cut-off, read whole
// through a bitmap scan of the range: a cost that grows with the table on every batch. Checked
// here on the generic plan of each batch statement, over tables of 20,000 rows, analyzed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { genericPlan, planNodes, recordingExecutor } from '../support/postgres-plans.js';
import type pg from 'pg';

const available = await requirePostgres('PostgreSQL plans of purge()');
const ROWS = 20_000;

describe.skipIf(!available)('PostgreSQL plans of purge(), generic, over large tables', () => {
  const schema = freshSchemaName('purgeplans');
  let pool: pg.Pool;
  /** The purge statements the store sent, by table, with their parameters. */
  const sent = new Map<string, { sql: string; params: readonly unknown[] }>();

  beforeAll(async () => {
    pool = createPool({ max: 4 });
    const recording = recordingExecutor(fromPg(pool), (sql, params) => {
      const table = /^DELETE FROM \S+\.(instances|signals) /.exec(sql)?.[1];
      if (table) sent.set(table, { sql, params });
    });
    const store = new PostgresWorkflowStore({ executor: recording, schema });
    await store.init();
    const s = `"${schema}"`;
    await pool.query(`INSERT INTO ${s}.instances (id, workflow, version, status, input, signal_cursor, created_at, updated_at, runs)
      SELECT 'i' || g, 'w', 1, CASE WHEN g % 10 = 0 THEN 'running' ELSE 'completed' END, 'null'::json, 0, g, g, 1 FROM generate_series(1, ${ROWS}) g`);
    await pool.query(`INSERT INTO ${s}.signals (id, name, key, topic, payload, created_at)
      SELECT nextval('${s}.signal_ids'), 's', NULL, 's', 'null'::json, g FROM generate_series(1, ${ROWS}) g`);
    await pool.query(`ANALYZE ${s}.instances`);
    await pool.query(`ANALYZE ${s}.signals`);
    await store.purge({ before: 10, statuses: ['completed'], limit: 100 });
    await store.close();
  });

  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  for (const table of ['instances', 'signals']) {
    it(`deletes a batch of ${table} by key, reading no range of the table whole`, async () => {
      const statement = sent.get(table);
      expect(statement).toBeDefined();
      const client = await pool.connect();
      try {
        // A cut-off that most rows are before: the batch must still read only what it deletes.
        const params = [...statement!.params];
        params[table === 'instances' ? params.indexOf(10) : 0] = ROWS - 100;
        const scans = planNodes(await genericPlan(client, statement!.sql, params)).filter((node) => node['Relation Name'] === table);
        expect(scans.length).toBeGreaterThan(0);
        expect(scans.filter((node) => node['Node Type'] === 'Seq Scan' || node['Node Type'] === 'Bitmap Heap Scan')).toEqual([]);
      } finally {
        client.release();
      }
    });
  }
});
