// The PostgreSQL claim beside many sleeping instances of the workflow it claims: for each size in
// CLAIM_SLEEPING (20000,100000), a fresh schema holding that many instances suspended until later
// (priority 0, one workflow) and CLAIM_DUE (5) due ones, after VACUUM ANALYZE; a claim of 10 as the
// worker sends it (a named prepared statement, so after five runs PostgreSQL may keep a generic
// plan), each in a transaction rolled back so every claim finds the same due instances.
// With a second checkout's directory as argument (`npm run bench:claim -- /path/to/checkout`), its
// claim statement (src/postgres/postgres-claim-statements.ts there) runs beside this one on the
// same data, alternating in CLAIM_ROUNDS (8) rounds of CLAIM_REPS (50) claims, so both see the
// same load. Prints each statement's EXPLAIN (ANALYZE, BUFFERS) after the rounds on stderr, and
// one JSON object last: per size and statement the median claim time (client side, ms) and the
// ratio to the first statement given.
// CLAIM_KEYS (default 0) spreads the due instances over that many concurrency keys (`k0`, `k1`...,
// created round robin), for the fair claim: `CLAIM_SLEEPING=0 CLAIM_DUE=100000 CLAIM_KEYS=100`.
// Run: `npm run bench:claim [-- <checkout>]` (PostgreSQL at PGHOST/PGPORT, user postgres, db test).
import { resolve } from 'node:path';
import pg from 'pg';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { postgresClaimStatements } from '../src/postgres/postgres-claim-statements.js';
import { createPool, pgConnection } from '../test/support/postgres.js';

const SIZES = (process.env.CLAIM_SLEEPING ?? '20000,100000').split(',').map(Number);
const DUE = Number(process.env.CLAIM_DUE ?? 5);
const ROUNDS = Number(process.env.CLAIM_ROUNDS ?? 8);
const REPS = Number(process.env.CLAIM_REPS ?? 50);
const KEYS = Number(process.env.CLAIM_KEYS ?? 0);
const LIMIT = 10;
const compare = process.argv[2];

type Build = (schema: string) => { claim: string };
const builds: Array<{ name: string; statements: Build }> = [];
if (compare) {
  const module = (await import(resolve(compare, 'src/postgres/postgres-claim-statements.ts'))) as {
    postgresClaimStatements: Build;
  };
  builds.push({ name: `compared (${compare})`, statements: module.postgresClaimStatements });
}
builds.push({ name: 'this checkout', statements: postgresClaimStatements });

function say(message: string): void {
  process.stderr.write(`[bench:claim ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;

async function measure(size: number) {
  const schema = `claim_${Date.now().toString(36)}_${size}`;
  const pool = createPool({ max: 2 });
  const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
  await store.init();
  const client = new pg.Client(pgConnection);
  await client.connect();
  try {
    const now = Date.now();
    const s = `"${schema}".instances`;
    await client.query(
      `INSERT INTO ${s} (id, workflow, version, status, signal_cursor, priority, wake_at, created_at, updated_at)
SELECT 'sleeps-' || g, 'bench.flow', 1, 'suspended', 0, 0, $1::bigint + 3600000 + g, $1::bigint - 1000000 + g, $1::bigint FROM generate_series(1, $2::integer) g`,
      [now, size],
    );
    await client.query(
      `INSERT INTO ${s} (id, workflow, version, status, signal_cursor, priority, wake_at, created_at, updated_at, concurrency_key)
SELECT 'due-' || g, 'bench.flow', 1, 'pending', 0, 0, $1::bigint - $2::integer - 100 + g, $1::bigint - $2::integer + g, $1::bigint,
  CASE WHEN $3::integer > 0 THEN 'k' || (g % $3::integer) END FROM generate_series(1, $2::integer) g`,
      [now, DUE, KEYS],
    );
    await client.query(`VACUUM ANALYZE ${s}`);
    say(`${size} sleeping, ${DUE} due over ${KEYS} keys: ${ROUNDS} rounds of ${REPS} claims per statement`);
    const params = [now + 1000, ['bench.flow'], [1], LIMIT, 'bench-token', 'bench', now + 31_000];
    const statements = builds.map((build, i) => ({ name: `bench_claim_${i}`, text: build.statements(schema).claim }));
    const times: number[][] = builds.map(() => []);
    const claimOnce = async (i: number) => {
      await client.query('BEGIN');
      const started = process.hrtime.bigint();
      const { rows } = await client.query({ ...statements[i]!, values: params });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      await client.query('ROLLBACK');
      if (rows.filter((row) => row.id !== null).length !== Math.min(DUE, LIMIT))
        throw new Error(`statement ${i} claimed ${rows.length} rows, expected ${Math.min(DUE, LIMIT)}`);
      return ms;
    };
    for (let i = 0; i < builds.length; i++) for (let k = 0; k < 10; k++) await claimOnce(i); // warm-up, past the plan cache's 5 custom plans
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse();
      for (const i of order) for (let k = 0; k < REPS; k++) times[i]!.push(await claimOnce(i));
    }
    const explains: string[] = [];
    for (const [i, build] of builds.entries()) {
      await client.query('BEGIN');
      const literal = `(${params[0]}, ARRAY['bench.flow'], ARRAY[1], ${LIMIT}, 'bench-token', 'bench', ${params[6]})`;
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE ${statements[i]!.name}${literal}`);
      await client.query('ROLLBACK');
      const plan = rows.map((row) => String(row['QUERY PLAN'])).join('\n');
      say(`${build.name}, ${size} sleeping, the statement's cached plan:\n${plan}`);
      explains.push(plan);
    }
    const medians = times.map(median);
    return {
      sleeping: size,
      due: DUE,
      keys: KEYS,
      statements: builds.map((build, i) => ({
        name: build.name,
        median_ms: +medians[i]!.toFixed(3),
        ratio: +(medians[i]! / medians[0]!).toFixed(3),
        execution_ms: Number(/Execution Time: ([\d.]+) ms/.exec(explains[i]!)?.[1]),
        buffers: Number(/Buffers: shared hit=(\d+)/.exec(explains[i]!)?.[1]),
      })),
    };
  } finally {
    await client.end();
    await store.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
}

const results = [];
for (const size of SIZES) results.push(await measure(size));
console.log(JSON.stringify({ limit: LIMIT, rounds: ROUNDS, reps: REPS, results }, null, 2));
