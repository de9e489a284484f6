// purge() runs as prepared statements, one batch after another, and PostgreSQL may settle on the
// generic plan of its batch statements after their first runs. Each batch takes `limit` rows found
// by key order; with that limit a parameter, a generic plan of `DELETE ... WHERE id IN (SELECT ...
// LIMIT $n)` joins them to every finished instance (or signal) before the cut-off, read whole
// through a bitmap scan of the range: a cost that grows with the table on every batch (joined to
// the batch, the rate windows were read whole by a hash join, or a merge over their range). Checked
// here on the generic and the custom plan of each batch statement (and of delete()), over tables
// of 20,000 rows: the rows deleted, and each candidate's child and parent, are reached by key.
//
// The children (a third of the instances) and their ends come after the ANALYZE, as they do when
// an application starts child workflows on a store it has used for a while: until autovacuum
// analyzes `instances` again, the statistics say the partial index of children (instances_parent)
// is empty, and the planner then takes it for any lookup it can serve, by a condition on its last
// column (`id`) that reads the whole index. A signal purge that found a child's parent through a
// join did so for each candidate end (3.4 s a batch of 1,000 with 120,000 children).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { planNodes, preparedPlan, recordingExecutor, type PlanNode } from '../support/postgres-plans.js';
import type pg from 'pg';

const available = await requirePostgres('PostgreSQL plans of purge()');
const ROWS = 20_000;
const CHILDREN = 10_000;

/**
 * The statements checked: the table each deletes from, the alias of its rows in the statement,
 * how many lookups of a child or parent it makes per candidate, and how to tell it from the others.
 */
const STATEMENTS = {
  'purge of instances': {
    table: 'instances',
    alias: 'instances',
    probes: 2,
    matches: (sql: string) => /^DELETE FROM \S+\.instances WHERE id = ANY/.test(sql),
  },
  'purge of signals': {
    table: 'signals',
    alias: 'signals',
    probes: 3,
    matches: (sql: string) => /^DELETE FROM \S+\.signals WHERE id = ANY/.test(sql),
  },
  'purge of rate windows': {
    table: 'rate_windows',
    alias: 'r',
    probes: 0,
    matches: (sql: string) => /^DELETE FROM \S+\.rate_windows /.test(sql),
  },
  'delete()': {
    table: 'instances',
    alias: 'i',
    probes: 2,
    matches: (sql: string) => /^DELETE FROM \S+\.instances i WHERE i\.id = \$1 /.test(sql),
  },
} as const;

/** The scans of `table` in `plan` (not the delete itself) whose alias is one of `aliases`. */
const scansOf = (plan: PlanNode, table: string, aliases: readonly string[]) =>
  planNodes(plan).filter(
    (node) => node['Node Type'].endsWith('Scan') && node['Relation Name'] === table && aliases.includes(node.Alias!),
  );

/** A scan, shortly: how it reads which relation, for a failure message. */
const scan = (node: PlanNode) =>
  `${node['Node Type']} ${node['Index Name'] ?? ''} on ${node['Relation Name']} ${node.Alias ?? ''}`.replace(
    / +/g,
    ' ',
  );

describe.skipIf(!available)('PostgreSQL plans of purge(), generic and custom, over large tables with children', () => {
  const schema = freshSchemaName('purgeplans');
  let pool: pg.Pool;
  /** The statements the store sent, by label, with their parameters. */
  const sent = new Map<string, { sql: string; params: readonly unknown[] }>();

  beforeAll(async () => {
    pool = createPool({ max: 4 });
    const recording = recordingExecutor(fromPg(pool), (sql, params) => {
      for (const [label, { matches }] of Object.entries(STATEMENTS)) if (matches(sql)) sent.set(label, { sql, params });
    });
    const store = new PostgresWorkflowStore({ executor: recording, schema });
    await store.init();
    const s = `"${schema}"`;
    // No ANALYZE but ours: autovacuum's, once the children are in, would hide what the planner does until it runs.
    for (const table of ['instances', 'signals', 'rate_windows'])
      await pool.query(`ALTER TABLE ${s}.${table} SET (autovacuum_enabled = false)`);
    await pool.query(`INSERT INTO ${s}.instances (id, workflow, version, status, input, signal_cursor, created_at, updated_at, runs)
      SELECT 'i' || g, 'w', 1, CASE WHEN g % 10 = 0 THEN 'running' ELSE 'completed' END, 'null'::json, 0, g, g, 1 FROM generate_series(1, ${ROWS}) g`);
    await pool.query(`INSERT INTO ${s}.signals (id, name, key, topic, payload, created_at)
      SELECT nextval('${s}.signal_ids'), 's', NULL, 's', 'null'::json, g FROM generate_series(1, ${ROWS}) g`);
    await pool.query(`INSERT INTO ${s}.rate_windows (workflow, has_key, key, window_end, count)
      SELECT 'w', true, 'k' || g, g, 1 FROM generate_series(1, ${ROWS}) g`);
    for (const table of ['instances', 'signals', 'rate_windows']) await pool.query(`ANALYZE ${s}.${table}`);
    // Finished children of the instances above (a tenth of them unfinished), each with its end.
    await pool.query(`INSERT INTO ${s}.instances (id, workflow, version, status, input, signal_cursor, created_at, updated_at, runs, parent_id, parent_close)
      SELECT 'c' || g, 'child', 1, 'completed', 'null'::json, 0, g, g, 1, 'i' || (g * 2), 'cancel' FROM generate_series(1, ${CHILDREN}) g`);
    await pool.query(`INSERT INTO ${s}.signals (id, name, key, topic, payload, created_at)
      SELECT nextval('${s}.signal_ids'), '$child-ended', 'c' || g, '12:$child-ended=c' || g, 'null'::json, g FROM generate_series(1, ${CHILDREN}) g`);
    await store.purge({ before: 10, statuses: ['completed'], limit: 100 });
    expect(await store.delete('c21', ['completed'])).toBe(true);
    await store.close();
  });

  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  for (const [label, { table, alias, probes: lookups }] of Object.entries(STATEMENTS)) {
    for (const plan of ['generic', 'custom'] as const) {
      it(`${label} reaches the rows it deletes, and each child and parent it checks, by key (${plan} plan)`, async () => {
        const statement = sent.get(label);
        expect(statement).toBeDefined();
        const client = await pool.connect();
        try {
          // A cut-off that most rows are before, and WorkflowClient.purge()'s batch of 1,000: the
          // batch must still read only what it deletes.
          const params = [...statement!.params];
          if (label !== 'delete()') {
            params[params.indexOf(10)] = ROWS - 100;
            params[params.indexOf(100)] = 1_000;
          }
          const explained = await preparedPlan(client, statement!.sql, params, plan);
          const deleted = scansOf(explained, table, [alias]);
          expect(deleted.map(scan)).toEqual([`Index Scan ${table}_pkey on ${table} ${alias}`]);
          // The child of an end (c) and the parent of a child (p, then q to lock it): primary-key probes.
          const probes = scansOf(explained, 'instances', ['c', 'p', 'q']);
          expect(probes.map(scan).filter((text) => !text.includes(' instances_pkey '))).toEqual([]);
          expect(probes.length).toBe(lookups);
          expect(
            planNodes(explained)
              .filter((node) => node['Node Type'] === 'Seq Scan' || node['Node Type'] === 'Bitmap Heap Scan')
              .map(scan),
          ).toEqual([]);
        } finally {
          client.release();
        }
      });
    }
  }
});
