// Benchmarks @nestjs/workflows on PostgreSQL with the peers' workloads (../shared/bench/peers/README.md):
//   W1: N instances of a 3-step workflow started at once, one worker process, concurrency 10, until the
//       database shows all N completed (workflows/s, steps/s).
//   W2: one 3-step workflow started and awaited, W2_REPS times in a row (p50, p95 ms); beside it,
//       four one-row UPDATE commits back to back from this process, W2's floor with the driver in it.
// STEP_KIND=transaction runs each step as ctx.transaction() instead of ctx.step() (the same body, in
// a transaction of the store's database that also records the step's result).
// Write cost per workflow: committed transactions (pg_stat_database.xact_commit, which also counts
// read-only transactions) and WAL COMMIT records (pg_waldump, write transactions only, as the peers
// report them). Run: `npm run bench` (PostgreSQL at PGHOST/PGPORT, user postgres, database test).
// CODEC=aes runs the same with payload encryption (`AesGcmPayloadCodec`, a fresh random key).
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { AesGcmPayloadCodec, WorkflowClient, WorkflowEvents, WorkflowsModule } from '../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { createPool, pgConnection } from '../test/support/postgres.js';
import { runW1, runW2Once, STEP_KIND, STEPS, ThreeSteps, type W1Run } from './fixtures/w1.js';

const N = Number(process.env.N ?? 1000);
const W2_REPS = Number(process.env.W2_REPS ?? 50);
const W1_WARMUP = Number(process.env.W1_WARMUP ?? 20);
const W2_WARMUP = Number(process.env.W2_WARMUP ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);
const schema = `bench_${Date.now().toString(36)}`;
const CODEC = process.env.CODEC ?? 'none';
if (CODEC !== 'none' && CODEC !== 'aes') throw new Error(`CODEC=${CODEC}: use none or aes.`);

const pool = createPool({ max: CONCURRENCY + 2 });
const check = new pg.Client(pgConnection);
await check.connect();

@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }),
      worker: { concurrency: CONCURRENCY },
      ...(CODEC === 'aes' ? { codec: new AesGcmPayloadCodec({ key: randomBytes(32), id: 'bench' }) } : {}),
    }),
  ],
  providers: [ThreeSteps],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const events = app.get(WorkflowEvents);

const xactCommits = async () =>
  Number(
    (await check.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()'))
      .rows[0].n,
  );
const walMark = async () => (await check.query('SELECT pg_current_wal_flush_lsn()::text AS l')).rows[0].l as string;
async function walCommits(from: string, to: string): Promise<number | null> {
  try {
    const dataDir = (await check.query('SHOW data_directory')).rows[0].data_directory as string;
    const bin = process.env.PG_BINDIR ?? '/usr/lib/postgresql/15/bin';
    const text = execFileSync(
      `${bin}/pg_waldump`,
      ['-p', `${dataDir}/pg_wal`, '-s', from, '-e', to, '--stats=record'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    return Number(/^Transaction\/COMMIT\s+(\d+)/m.exec(text)?.[1] ?? 0);
  } catch {
    return null;
  }
}
async function completedCount(prefix: string): Promise<number> {
  const sql = `SELECT count(*)::int AS n FROM "${schema}".instances WHERE status = 'completed' AND id LIKE $1`;
  return (await check.query(sql, [`${prefix}%`])).rows[0].n as number;
}
// Idle backends report their pg_stat counters within 10 s (PG 15): wait that long before reading them.
const settle = () => new Promise((resolve) => setTimeout(resolve, 11_000));

let w1Phases: Pick<W1Run, 'startsMs' | 'nodeCpuMs' | 'nodeThreadsMs'> = {
  startsMs: 0,
  nodeCpuMs: 0,
  nodeThreadsMs: null,
};

async function w1(prefix: string, n: number) {
  const run = await runW1(client, n, prefix, completedCount);
  w1Phases = run;
  return run.wallMs;
}

async function w2Once(id: string): Promise<number> {
  if (!process.env.W2_TRACE) return runW2Once(client, events, id);
  // W2_TRACE=1 prints when each event of every W2 run came, to see where its time goes.
  const marks: string[] = [];
  let started = performance.now();
  const sub = events.subscribe((e) => {
    if ('id' in e && e.id === id)
      marks.push(`${e.type}${'step' in e ? ':' + e.step : ''}@${(performance.now() - started).toFixed(2)}`);
  });
  const took = await runW2Once(client, events, id, (at) => {
    started = at;
    marks.push(`start-resolved@${(performance.now() - at).toFixed(2)}`);
  });
  sub.unsubscribe();
  console.log(marks.join(' '), `done@${took.toFixed(2)}`);
  return took;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

// As the peers' harness does before each system: start from a clean checkpoint.
await check.query('CHECKPOINT');
await w1('warm-', W1_WARMUP);
await settle();
let commits0 = await xactCommits();
let wal0 = await walMark();
const w1Ms = await w1('w1-', N);
await settle();
const w1Xact = (await xactCommits()) - commits0;
const w1Wal = await walCommits(wal0, await walMark());

for (let k = 0; k < W2_WARMUP; k++) await w2Once(`w2-warm-${k}`);
await settle();
commits0 = await xactCommits();
wal0 = await walMark();
const latencies: number[] = [];
for (let k = 0; k < W2_REPS; k++) latencies.push(await w2Once(`w2-${k}`));
await settle();
const w2Xact = (await xactCommits()) - commits0;
const w2Wal = await walCommits(wal0, await walMark());

// W2's floor as Node sees it: four one-row UPDATE commits back to back through `pg` from this
// process (pgbench's latency, the floor, leaves out the driver and the event loop). After
// the counting above, so these commits are not W2's.
await check.query(`CREATE TABLE "${schema}".floor (id int PRIMARY KEY, v int NOT NULL)`);
await check.query(`INSERT INTO "${schema}".floor VALUES (1, 0)`);
const fourCommits: number[] = [];
for (let k = -W2_WARMUP; k < W2_REPS; k++) {
  const started = performance.now();
  for (let c = 0; c < 4; c++) await check.query(`UPDATE "${schema}".floor SET v = v + 1 WHERE id = 1`);
  if (k >= 0) fourCommits.push(performance.now() - started);
}

const wfPerS = N / (w1Ms / 1000);
const result = {
  system: `@nestjs/workflows (PostgreSQL, ctx.${STEP_KIND}${CODEC === 'aes' ? ', AesGcmPayloadCodec' : ''})`,
  w1_workflows_per_s: +wfPerS.toFixed(1),
  w1_steps_per_s: +(wfPerS * STEPS).toFixed(1),
  w1_wall_ms: Math.round(w1Ms),
  w1_all_started_ms: w1Phases.startsMs,
  w1_node_cpu_ms: w1Phases.nodeCpuMs,
  // Of it, the main thread's and the other threads' (mostly V8's optimizing compiler while the process is new).
  w1_node_main_thread_ms: w1Phases.nodeThreadsMs?.main ?? null,
  w1_node_other_threads_ms: w1Phases.nodeThreadsMs?.other ?? null,
  w1_xact_commits_per_wf: +(w1Xact / N).toFixed(2),
  w1_wal_commits_per_wf: w1Wal === null ? null : +(w1Wal / N).toFixed(2),
  w2_p50_ms: +percentile(latencies, 50).toFixed(1),
  w2_p95_ms: +percentile(latencies, 95).toFixed(1),
  w2_xact_commits_per_wf: +(w2Xact / W2_REPS).toFixed(2),
  w2_wal_commits_per_wf: w2Wal === null ? null : +(w2Wal / W2_REPS).toFixed(2),
  w2_node_four_commits_p50_ms: +percentile(fourCommits, 50).toFixed(2),
};
console.log(JSON.stringify(result));

await app.close();
await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
await pool.end();
await check.end();
