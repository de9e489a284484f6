// The claim's cost is what it takes, not how many instances sleep. Checked on the plans PostgreSQL
// runs, custom and generic (the one `pg` switches a prepared statement to), for the plain claim and
// the limited claim's search:
// - beside 20,000 instances sleeping until later (spread over five priorities), 2,000 running ones
//   and 2,000 waiting for a signal, all of the claimed workflow, a claim of the three that are due
//   reads a few dozen pages. A plan that walks the sleeping instances (`instances_due` bounded only
//   by priority, or `instances_workflow_created` filtering on wake_at) reads hundreds.
// - with 8,000 instances of another workflow due ahead of them, it passes over those in
//   `instances_due` on its index conditions, without reading their rows, rather than reading every
//   instance of its own workflow through `instances_workflow_created`.
// - with statistics taken while the table held three instances, then 10,000 of the workflow put in
//   (finished and sleeping), it still takes the three through `instances_due`: the workflow-name
//   bounds compare under "POSIX", which `instances_workflow_created` can't serve (migration 0012).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { postgresClaimStatements } from '../../src/postgres/postgres-claim-statements.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

const T = 1_700_000_000_000;
const available = await requirePostgres('PostgreSQL claim plans');

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

/** EXPLAIN (ANALYZE, BUFFERS) of `sql` prepared with `types`, executed with `args` (SQL literals), in a transaction rolled back. */
async function explain(client: pg.PoolClient, sql: string, types: string[], args: string[]): Promise<PlanNode> {
  await client.query(`PREPARE claim_plan(${types.join(', ')}) AS ${sql}`);
  await client.query('BEGIN');
  try {
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_plan(${args.join(', ')})`,
    );
    return (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE claim_plan');
  }
}

const CLAIMS = {
  claim: {
    sql: (schema: string) => postgresClaimStatements(schema).claim,
    types: ['bigint', 'text[]', 'integer[]', 'integer', 'text', 'text', 'bigint'],
    args: [String(T + 100), `ARRAY['flow']`, 'ARRAY[1]', '10', `'claim-token'`, `'claimer'`, String(T + 30_100)],
  },
  'claim under limits (candidates)': {
    sql: (schema: string) => postgresClaimStatements(schema).claimCandidates,
    types: ['bigint', 'text[]', 'integer[]', 'integer', ...Array<string>(6).fill('text[]')],
    args: [String(T + 100), `ARRAY['flow']`, 'ARRAY[1]', '10', ...Array<string>(6).fill(`'{}'::text[]`)],
  },
  // Full slots and windows, passed over in a filter that an instance to terminate bypasses: still a filter on the row.
  'claim under limits (candidates), with full slots and windows': {
    sql: (schema: string) => postgresClaimStatements(schema).claimCandidates,
    types: ['bigint', 'text[]', 'integer[]', 'integer', ...Array<string>(6).fill('text[]')],
    args: [
      String(T + 100),
      `ARRAY['flow']`,
      'ARRAY[1]',
      '10',
      `ARRAY['another']`,
      `ARRAY['flow']`,
      `ARRAY['busy']`,
      `ARRAY['another']`,
      `ARRAY['flow']`,
      `ARRAY['busy']`,
    ],
  },
};

/**
 * For each claim statement and plan mode, a test that `check`s the scans of `instances` in its
 * plan (after checking that it took the 3 due instances and read no table whole), on a schema
 * that `fill` filled (given an INSERT of rows), vacuumed and analyzed.
 */
function plans(
  title: string,
  fill: (insert: (rows: string) => Promise<unknown>) => Promise<void>,
  check: (scans: PlanNode[]) => void,
  /** `stale`: analyzed once with `seed` rows in, filled after (a young table, or one that grew since its last ANALYZE). */
  statistics: { stale: (insert: (rows: string) => Promise<unknown>) => Promise<void> } | null = null,
): void {
  describe.skipIf(!available)(`PostgreSQL claim plans: ${title}`, () => {
    const fixture = usePostgresStore('claimplan', { beforeAll, afterAll });

    beforeAll(async () => {
      const table = `"${fixture.schema}".instances`;
      const columns =
        'id, workflow, version, status, signal_cursor, priority, wake_at, wait_topics, lease_token, lease_owner, lease_until, created_at, updated_at';
      const insert = (rows: string) => fixture.pool.query(`INSERT INTO ${table} (${columns}) ${rows}`);
      if (statistics) {
        await statistics.stale(insert);
        await fixture.pool.query(`VACUUM ANALYZE ${table}`);
        // No autovacuum while the test runs: the statistics stay those of the seed.
        await fixture.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      }
      await fill(insert);
      await fixture.pool.query(`INSERT INTO ${table} (${columns})
SELECT 'due-' || g, 'flow', 1, 'pending', 0, 2, ${T} - 10 + g, '{}', NULL, NULL, NULL, ${T} + g, ${T} FROM generate_series(1, 3) g`);
      if (!statistics) await fixture.pool.query(`VACUUM ANALYZE ${table}`);
    });

    for (const [label, { sql, types, args }] of Object.entries(CLAIMS)) {
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        it(`${label}, ${mode}`, async () => {
          const client = await fixture.pool.connect();
          try {
            await client.query(`SET plan_cache_mode = ${mode}`);
            const plan = await explain(client, sql(fixture.schema), types, args);
            expect(plan['Actual Rows']).toBe(3);
            const scans = nodes(plan).filter((node) => node['Relation Name'] === 'instances');
            expect(scans.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
            expect(scans.filter((node) => node['Index Name'] === 'instances_workflow_created')).toEqual([]);
            // Rows read and then rejected: at most a few, never the sleeping, running or other ones.
            for (const scan of scans) expect(scan['Rows Removed by Filter'] ?? 0).toBeLessThanOrEqual(10);
            check(scans);
          } finally {
            await client.query('RESET plan_cache_mode');
            client.release();
          }
        });
      }
    }
  });
}

plans(
  'beside 20,000 sleeping instances of the workflow, it reads a few pages per priority',
  async (insert) => {
    await insert(
      `SELECT 'sleeps-' || g, 'flow', 1, 'suspended', 0, g % 5, ${T} + 3600000 + g, '{}', NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 20000) g`,
    );
    await insert(
      `SELECT 'runs-' || g, 'flow', 1, 'running', 0, g % 5, ${T} - 1000, '{}', 'token', 'worker', ${T} + 60000, ${T} - g, ${T} FROM generate_series(1, 2000) g`,
    );
    await insert(
      `SELECT 'waits-' || g, 'flow', 1, 'suspended', 0, 0, NULL, ARRAY['topic-' || g], NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 2000) g`,
    );
  },
  (scans) => {
    // The search's pages (the UPDATE's index upkeep is not a scan): a few per priority. The
    // sleeping instances' entries in instances_due alone fill over 150 pages, their rows over 400.
    const read = scans
      .filter((node) => node['Node Type'].endsWith('Scan'))
      .reduce((sum, node) => sum + node['Shared Hit Blocks'] + node['Shared Read Blocks'], 0);
    expect(read).toBeLessThan(80);
  },
);

plans(
  'behind 8,000 due instances of another workflow, it passes over them in instances_due',
  async (insert) => {
    await insert(
      `SELECT 'other-' || g, 'another', 1, 'pending', 0, 2, ${T} - 9000 + g, '{}', NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 8000) g`,
    );
    await insert(
      `SELECT 'sleeps-' || g, 'flow', 1, 'suspended', 0, 2, ${T} + 3600000 + g, '{}', NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 8000) g`,
    );
  },
  (scans) => {
    const free = scans.find((node) => node['Node Type'] === 'Index Scan' && node['Actual Rows'] === 3);
    expect(free?.['Index Name']).toBe('instances_due');
  },
);

plans(
  'with statistics from when the table was young, it still walks instances_due, not every instance of the workflow',
  async (insert) => {
    await insert(
      `SELECT 'done-' || g, 'flow', 1, 'completed', 0, 0, NULL, '{}', NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 5000) g`,
    );
    await insert(
      `SELECT 'sleeps-' || g, 'flow', 1, 'suspended', 0, 0, ${T} + 3600000 + g, '{}', NULL, NULL, NULL, ${T} - g, ${T} FROM generate_series(1, 5000) g`,
    );
  },
  (scans) => {
    const search = scans.filter(
      (node) =>
        node['Node Type'] === 'Index Scan' &&
        // Leases (the limits' counts, the fair claim's running instances by key) and rows by id.
        !['instances_leased', 'instances_leased_until', 'instances_pkey'].includes(node['Index Name']!),
    );
    // The due indexes only: instances_due, and the fair claim's per-key ones.
    expect(search.map((node) => node['Index Name'])).toContain('instances_due');
    for (const node of search)
      expect(['instances_due', 'instances_due_key', 'instances_due_keyed']).toContain(node['Index Name']);
  },
  {
    // As a new store sees it: a few instances when autovacuum last analyzed the table.
    stale: async (insert) => {
      await insert(`SELECT 'seed-done', 'flow', 1, 'completed', 0, 0, NULL, '{}', NULL, NULL, NULL, ${T}, ${T}`);
      await insert(
        `SELECT 'seed-sleeps', 'flow', 1, 'suspended', 0, 0, ${T} + 3600000, '{}', NULL, NULL, NULL, ${T}, ${T}`,
      );
      await insert(
        `SELECT 'seed-waits', 'flow', 1, 'suspended', 0, 0, NULL, ARRAY['topic'], NULL, NULL, NULL, ${T}, ${T}`,
      );
    },
  },
);
