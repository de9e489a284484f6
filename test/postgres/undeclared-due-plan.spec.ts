// countUndeclaredDue() runs rarely (an idle worker, at most once a minute), but on a store whose
// `instances` table holds every finished instance too: it must read only the instances a claim
// could take (the partial index instances_due) and the leases (instances_leased_until), never
// scan the table. Checked on the generic and the custom plan, over 20,000 rows, most finished.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { planNodes, preparedPlan, recordingExecutor, type PlanNode } from '../support/postgres-plans.js';
import type pg from 'pg';

const available = await requirePostgres('PostgreSQL plan of countUndeclaredDue()');
const ROWS = 20_000;
const NOW = 1_000_000;

/** A scan, shortly: how it reads which relation, for a failure message. */
const scan = (node: PlanNode) =>
  `${node['Node Type']} ${node['Index Name'] ?? ''} on ${node['Relation Name']}`.replace(/ +/g, ' ');

describe.skipIf(!available)('PostgreSQL plan of countUndeclaredDue(), generic and custom, over a large table', () => {
  const schema = freshSchemaName('undeclplan');
  let pool: pg.Pool;
  let statement: { sql: string; params: readonly unknown[] } | undefined;

  beforeAll(async () => {
    pool = createPool({ max: 2 });
    const recording = recordingExecutor(fromPg(pool), (sql, params) => {
      if (sql.includes('NOT EXISTS (SELECT 1 FROM unnest(') && sql.includes('GROUP BY workflow, version'))
        statement = { sql, params };
    });
    const store = new PostgresWorkflowStore({ executor: recording, schema });
    await store.init();
    const s = `"${schema}"`;
    await pool.query(`ALTER TABLE ${s}.instances SET (autovacuum_enabled = false)`);
    // Most finished; a tenth running under a live lease; a hundredth due (declared 'w' v1, and 'gone' v2).
    await pool.query(`INSERT INTO ${s}.instances (id, workflow, version, status, input, signal_cursor, created_at, updated_at, runs, wake_at, lease_token, lease_until)
      SELECT 'i' || g, CASE WHEN g % 200 = 0 THEN 'gone' ELSE 'w' END, CASE WHEN g % 200 = 0 THEN 2 ELSE 1 END,
        CASE WHEN g % 100 = 0 THEN 'pending' WHEN g % 10 = 0 THEN 'running' ELSE 'completed' END, 'null'::json, 0, g, g, 1,
        CASE WHEN g % 10 = 0 THEN g END, CASE WHEN g % 10 = 0 AND g % 100 <> 0 THEN 't' || g END, CASE WHEN g % 10 = 0 AND g % 100 <> 0 THEN ${NOW} * 10 END
      FROM generate_series(1, ${ROWS}) g`);
    await pool.query(`ANALYZE ${s}.instances`);
    expect(
      await store.countUndeclaredDue({ dueBefore: NOW, workflows: [{ name: 'w', version: 1 }], cap: 1_000 }),
    ).toEqual([{ workflow: 'gone', version: 2, count: ROWS / 200 }]);
    await store.close();
  });

  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  for (const plan of ['generic', 'custom'] as const) {
    it(`reads instances only through instances_due and instances_leased_until (${plan} plan)`, async () => {
      expect(statement).toBeDefined();
      const client = await pool.connect();
      try {
        const explained = await preparedPlan(client, statement!.sql, statement!.params, plan);
        const scans = planNodes(explained).filter(
          (node) => node['Relation Name'] === 'instances' || node['Node Type'] === 'Bitmap Index Scan',
        );
        expect(scans.length).toBeGreaterThan(0);
        expect(
          scans
            .map(scan)
            .filter((text) => !/ instances_(due|leased_until) on /.test(text) && !text.startsWith('Bitmap Heap Scan')),
        ).toEqual([]);
        expect(new Set(scans.map((node) => node['Index Name']).filter(Boolean))).toEqual(
          new Set(['instances_due', 'instances_leased_until']),
        );
      } finally {
        client.release();
      }
    });
  }
});
