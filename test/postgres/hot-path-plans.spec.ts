// A prepared statement keeps the generic plan it made once, after its first few runs, until
// something invalidates it (an ANALYZE, a VACUUM). Made while `instances` was small and had never
// been vacuumed, a plan that joins a batch's rows to it with a hash join over a scan of the whole
// table looks cheapest, and it then reads every instance on every statement as the table grows
// (W1's server CPU per workflow grew round by round that way). So each statement of the run path
// (the create batch, the claim, the write batches of step results and of ends) is checked here on
// the plan it makes at that moment: generic, on a fresh schema with a few rows, never vacuumed.
// Each must reach `instances` by key, never scan it whole.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { genericPlan, planNodes, recordingExecutor } from '../support/postgres-plans.js';
import type pg from 'pg';

const T = 1_700_000_000_000;
const available = await requirePostgres('PostgreSQL plans of the run path');

describe.skipIf(!available)('PostgreSQL plans of the run path, made on a small table never vacuumed', () => {
  const schema = freshSchemaName('hotplans');
  let pool: pg.Pool;
  /** Every statement with parameters the store sent, by text, with the parameters of its last call. */
  const sent = new Map<string, readonly unknown[]>();

  beforeAll(async () => {
    pool = createPool({ max: 4 });
    const recording = recordingExecutor(fromPg(pool), (sql, params) => sent.set(sql, params));
    const store = new PostgresWorkflowStore({ executor: recording, schema });
    await store.init();
    // W1's path: a batch of creates, a claim, a batch of step results, a batch of ends.
    const workflow = 'plans.flow';
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.create({ id: `p-${i}`, workflow, version: 1, input: i, deadline: null, now: T }),
      ),
    );
    const token = randomUUID();
    const { instances } = await store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: 10,
      workflows: [{ name: workflow, version: 1 }],
    });
    expect(instances).toHaveLength(10);
    const entry = (name: string) => ({
      name,
      kind: 'step' as const,
      state: 'completed' as const,
      value: 1,
      attempts: 1,
      createdAt: T,
      updatedAt: T,
    });
    expect(
      await Promise.all(instances.map(({ id }) => store.write(id, token, { now: T, entries: [entry('one')] }))),
    ).toEqual(instances.map(() => true));
    const end = {
      status: 'completed' as const,
      output: 1,
      error: null,
      release: { wakeAt: null, waits: [], signalCursor: 0 },
    };
    expect(
      await Promise.all(instances.map(({ id }) => store.write(id, token, { now: T, entries: [entry('two')], ...end }))),
    ).toEqual(instances.map(() => true));
    await store.close();
  });

  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  const statements: Array<[string, (sql: string) => boolean]> = [
    [
      'the create batch',
      (sql) => sql.includes('INSERT INTO') && sql.includes('.instances') && sql.includes('UNION ALL'),
    ],
    ['the claim', (sql) => sql.startsWith('WITH RECURSIVE')],
    ['the write batch of step results', (sql) => sql.includes('WITH ORDINALITY AS r(') && !sql.includes('status')],
    ['the write batch of ends', (sql) => sql.includes('WITH ORDINALITY AS r(') && sql.includes('ended AS')],
  ];

  for (const [label, matches] of statements) {
    it(`${label} reaches instances by key in its generic plan`, async () => {
      const found = [...sent].filter(([sql]) => matches(sql));
      expect(found).toHaveLength(1);
      const [sql, params] = found[0]!;
      const client = await pool.connect();
      try {
        const { rows } = await client.query(
          `SELECT relpages FROM pg_class WHERE oid = '"${schema}".instances'::regclass`,
        );
        expect(rows[0].relpages).toBe(0);
        const scans = planNodes(await genericPlan(client, sql, params)).filter(
          (node) => node['Relation Name'] === 'instances',
        );
        expect(scans.length).toBeGreaterThan(0);
        expect(scans.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      } finally {
        client.release();
      }
    });
  }
});
