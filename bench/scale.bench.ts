// W3, scale: W1 (bench/fixtures/w1.ts: N three-step workflows started at once, concurrency 10) on
// PostgreSQL with many finished instances already in the table, against W1 on an empty table in
// the same run, then a long run for the process's memory, then the work shared by worker processes.
//   1. Baselines: W1 on a fresh, empty schema, once before each filled run and once at the end
//      (each baseline its own schema, so "empty" stays empty); each W1 figure is the median of
//      SCALE_REPS runs (3) after a warm-up.
//   2. For each size in SCALE_SIZES (10000,100000): the filled schema is topped up to that many
//      finished instances with one INSERT ... SELECT generate_series per table, each row a copy of
//      a real finished W1 instance of that schema (every column, its journal rows, created and
//      updated a millisecond apart back in time), then VACUUM ANALYZE (as autovacuum would have
//      done to a table that grew over days); then W1 there. Throughput relative to the baselines
//      around it; the target is at least 0.90.
//   3. SCALE_LONG_SECONDS (120) of W1 after W1 on the filled schema, the process's RSS and heap
//      sampled every 10 s: the series and its least-squares slope (MB per minute).
//   4. The same W1 with the workflows run by SCALE_WORKERS (1,2) worker processes
//      (bench/fixtures/w1-worker.ts), this process only starting them: throughput, and how many
//      instances each process ran (lease_owner of the finished rows, which names the process).
// Run: `npm run bench:scale:finished` (PostgreSQL at PGHOST/PGPORT, user postgres, database test), or
// `BENCH_STORE=mysql npm run bench:scale:finished` (MariaDB/MySQL, test/support/mysql.ts; its fill is one
// INSERT ... SELECT per table from a cross join of digits, and ANALYZE TABLE). Prints progress on
// stderr and one JSON object last.
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { postgresClaimStatements } from '../src/postgres/postgres-claim-statements.js';
import { createMysqlPool, dropTables, mysqlConnection } from '../test/support/mysql.js';
import { pgConnection } from '../test/support/postgres.js';
import { BENCH_STORE, benchStore } from './fixtures/bench-store.js';
import { runW1, STEPS, ThreeSteps, type W1Run } from './fixtures/w1.js';

const N = Number(process.env.N ?? 1000);
const REPS = Number(process.env.SCALE_REPS ?? 3);
const WARMUP = Number(process.env.W1_WARMUP ?? 20);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);
const SIZES = (process.env.SCALE_SIZES ?? '10000,100000').split(',').map(Number);
const LONG_SECONDS = Number(process.env.SCALE_LONG_SECONDS ?? 120);
const WORKERS = (process.env.SCALE_WORKERS ?? '1,2').split(',').filter(Boolean).map(Number);
const RSS_EVERY_MS = 10_000;
for (const size of SIZES)
  if (!Number.isInteger(size) || size < 0)
    throw new Error(`SCALE_SIZES: "${size}" is not a count of instances; give counts such as 10000,100000.`);
const base = `scale_${Date.now().toString(36)}`;
const schemas: string[] = [];

const MYSQL = BENCH_STORE === 'mysql';
/** The tables of `schema`, quoted, in the store's dialect. */
const table = (schema: string, name: string) => (MYSQL ? `\`${schema}_${name}\`` : `"${schema}".${name}`);

/** One connection beside the stores' pools, for counting, filling and dropping. */
const check = await (async () => {
  if (MYSQL) {
    const connection = await mysql.createConnection(mysqlConnection);
    return {
      query: async (sql: string, params: unknown[] = []) =>
        (await connection.query(sql, params))[0] as Array<Record<string, unknown>>,
      end: () => connection.end(),
    };
  }
  const client = new pg.Client(pgConnection);
  await client.connect();
  return {
    query: async (sql: string, params: unknown[] = []) =>
      (await client.query(sql, params)).rows as Array<Record<string, unknown>>,
    end: () => client.end(),
  };
})();
const dropSchema = async (schema: string) => {
  if (!MYSQL) return void (await check.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
  const pool = createMysqlPool({ connectionLimit: 1 });
  await dropTables(pool, schema);
  await pool.end();
};

function say(message: string): void {
  process.stderr.write(`[bench:scale ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** An app on `schema` (created and migrated on init), its worker on unless `worker` is false. */
let prefixes = 0;
let apps = 0;
/** A prefix no other run's ids have (`tag` lets a query find a group of runs). */
const freshPrefix = (schema: string, tag = 'r') => `${schema}-${tag}-${++prefixes}-`;

async function openApp(schema: string, worker = true, tag = 'r') {
  if (!schemas.includes(schema)) schemas.push(schema);
  const name = `bench-scale-${++apps}`;
  const { store, end } = benchStore(schema, CONCURRENCY + 2, name);
  @Module({
    imports: [WorkflowsModule.forRoot({ store, worker: worker ? { concurrency: CONCURRENCY } : false })],
    providers: [ThreeSteps],
  })
  class ScaleModule {}
  const app = await NestFactory.createApplicationContext(ScaleModule, { logger: ['error', 'warn'] });
  await app.init();
  const client = app.get(WorkflowClient);
  const completed = async (prefix: string) => {
    const sql = `SELECT count(*) AS n FROM ${table(schema, 'instances')} WHERE status = 'completed' AND id LIKE ${MYSQL ? '?' : '$1'}`;
    return Number((await check.query(sql, [`${prefix}%`]))[0]!.n);
  };
  return {
    name,
    client,
    completed,
    /** PostgreSQL: the CPU ms its backends (this app's pool) used so far, by pid (none on MySQL). */
    backendCpu: () => backendCpu(name),
    /** One W1 run with fresh ids. */
    w1: (options?: { local?: boolean; pollMs?: number }) =>
      runW1(client, N, freshPrefix(schema, tag), completed, options),
    warmUp: (options?: { local?: boolean; pollMs?: number }) =>
      runW1(client, WARMUP, freshPrefix(schema, 'warm'), completed, options),
    close: async () => {
      await app.close();
      await end();
    },
  };
}
type App = Awaited<ReturnType<typeof openApp>>;

const TICKS_PER_S = 100; // Linux's USER_HZ, what /proc/<pid>/stat counts in
/** The CPU ms (user + system) of each PostgreSQL backend serving `name`'s pool, read from /proc (the server is local). */
async function backendCpu(name: string): Promise<Map<number, number>> {
  const used = new Map<number, number>();
  if (MYSQL) return used;
  for (const row of await check.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name])) {
    try {
      // Fields 14 and 15 (utime, stime), after the command name in parentheses.
      const fields = readFileSync(`/proc/${row.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      used.set(Number(row.pid), ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S);
    } catch {
      // The backend ended between the two reads.
    }
  }
  return used;
}
const cpuSince = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);

const stepsPerS = (run: W1Run) => (N * STEPS) / (run.wallMs / 1000);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

/** REPS runs of W1 after a warm-up: the median steps/s, every run's, and the median CPU ms per workflow. */
async function measure(app: App, label: string, options?: { local?: boolean; pollMs?: number }) {
  await app.warmUp(options);
  const runs: W1Run[] = [];
  const dbCpu: number[] = [];
  for (let k = 0; k < REPS; k++) {
    const before = await app.backendCpu();
    runs.push(await app.w1(options));
    dbCpu.push(cpuSince(before, await app.backendCpu()) / N);
  }
  const result = {
    steps_per_s: +median(runs.map(stepsPerS)).toFixed(1),
    runs_steps_per_s: runs.map((run) => +stepsPerS(run).toFixed(1)),
    node_cpu_ms_per_wf: +median(runs.map((run) => run.nodeCpuMs / N)).toFixed(3),
    ...(MYSQL
      ? {}
      : { db_cpu_ms_per_wf: +median(dbCpu).toFixed(3), runs_db_cpu_ms_per_wf: dbCpu.map((ms) => +ms.toFixed(3)) }),
  };
  say(
    `${label}: ${result.steps_per_s} steps/s (${result.runs_steps_per_s.join(', ')})${MYSQL ? '' : `, PostgreSQL backends ${result.db_cpu_ms_per_wf} ms CPU/wf`}`,
  );
  return result;
}

let baselines = 0;
async function baseline() {
  const app = await openApp(`${base}_e${++baselines}`);
  try {
    return await measure(app, `empty ${baselines}`);
  } finally {
    await app.close();
  }
}

const count = async (sql: string) => Number((await check.query(sql))[0]!.n);

/** Tops `schema` up to `size` finished instances, copies of its finished instance `template`. */
async function fill(schema: string, size: number, template: string): Promise<{ added: number; ms: number }> {
  const instances = table(schema, 'instances');
  const journal = table(schema, 'journal');
  const finished = await count(
    `SELECT count(*) AS n FROM ${instances} WHERE status IN ('completed', 'failed', 'cancelled', 'compensation_failed')`,
  );
  const have = await count(`SELECT count(*) AS n FROM ${instances} WHERE id LIKE 'fill-%'`);
  const add = size - finished;
  if (add <= 0) return { added: 0, ms: 0 };
  const started = performance.now();
  const columns = async (name: string) =>
    (MYSQL
      ? await check.query(
          "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND extra NOT LIKE '%GENERATED%' ORDER BY ordinal_position",
          [`${schema}_${name}`],
        )
      : await check.query(
          "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER' ORDER BY ordinal_position",
          [schema, name],
        )
    ).map((row) => String(row.c ?? row.C));
  // 1..add: generate_series on PostgreSQL; on MySQL a cross join of digits (no recursion limit to meet).
  const digits = Math.max(1, String(add).length);
  const numbers = MYSQL
    ? `(SELECT ${Array.from({ length: digits }, (_, k) => `d${k}.d * ${10 ** k}`).join(' + ')} + 1 AS g FROM ${Array.from({ length: digits }, (_, k) => `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) AS d${k}`).join(', ')}) AS n`
    : `generate_series(1, ${add}) AS n(g)`;
  const p = MYSQL ? '?' : '$1';
  // Every column (generated ones aside) copied from the template but the id and the times (a millisecond apart, back in time).
  const id = MYSQL ? `CONCAT('fill-', LPAD(${have} + n.g, 7, '0'))` : `'fill-' || lpad((${have} + n.g)::text, 7, '0')`;
  const back = `(${have} + n.g)`;
  const instanceColumns = await columns('instances');
  const instanceValues = instanceColumns.map((c) =>
    c === 'id' ? id : c === 'created_at' || c === 'updated_at' ? `t.${c} - ${back}` : `t.${c}`,
  );
  const journalColumns = await columns('journal');
  const journalValues = journalColumns.map((c) => (c === 'instance_id' ? id : `t.${c}`));
  const quote = (c: string) => (MYSQL ? `\`${c}\`` : `"${c}"`);
  await check.query('BEGIN');
  try {
    await check.query(
      `INSERT INTO ${instances} (${instanceColumns.map(quote).join(', ')}) SELECT ${instanceValues.join(', ')} FROM ${instances} t, ${numbers} WHERE t.id = ${p} AND n.g <= ${add}`,
      [template],
    );
    await check.query(
      `INSERT INTO ${journal} (${journalColumns.map(quote).join(', ')}) SELECT ${journalValues.join(', ')} FROM ${journal} t, ${numbers} WHERE t.instance_id = ${p} AND n.g <= ${add}`,
      [template],
    );
  } catch (error) {
    await check.query('ROLLBACK');
    throw error;
  }
  await check.query('COMMIT');
  for (const name of [instances, journal])
    await check.query(MYSQL ? `ANALYZE TABLE ${name}` : `VACUUM ANALYZE ${name}`);
  return { added: add, ms: Math.round(performance.now() - started) };
}

/** RSS and heap every 10 s while `work` runs W1 again and again for SCALE_LONG_SECONDS. */
async function longRun(app: App) {
  const samples: Array<{ s: number; rss_mb: number; heap_used_mb: number }> = [];
  const started = performance.now();
  const sample = () => {
    const { rss, heapUsed } = process.memoryUsage();
    samples.push({
      s: Math.round((performance.now() - started) / 1000),
      rss_mb: +(rss / 2 ** 20).toFixed(1),
      heap_used_mb: +(heapUsed / 2 ** 20).toFixed(1),
    });
  };
  sample();
  const timer = setInterval(sample, RSS_EVERY_MS);
  const rates: number[] = [];
  try {
    while (performance.now() - started < LONG_SECONDS * 1000) rates.push(+stepsPerS(await app.w1()).toFixed(1));
  } finally {
    clearInterval(timer);
  }
  sample();
  const slope = (key: 'rss_mb' | 'heap_used_mb', from = 0) => {
    const points = samples.filter((p) => p.s >= from);
    const mx = points.reduce((a, p) => a + p.s, 0) / points.length;
    const my = points.reduce((a, p) => a + p[key], 0) / points.length;
    const sxy = points.reduce((a, p) => a + (p.s - mx) * (p[key] - my), 0);
    const sxx = points.reduce((a, p) => a + (p.s - mx) ** 2, 0);
    return sxx === 0 ? 0 : +((sxy / sxx) * 60).toFixed(2);
  };
  return {
    seconds: LONG_SECONDS,
    w1_runs: rates.length,
    steps_per_s_median: median(rates),
    // The table grows by N finished instances a run: does W1 slow down as it does?
    steps_per_s_median_by_third: [0, 1, 2].map((k) =>
      median(rates.slice(Math.floor((k * rates.length) / 3), Math.floor(((k + 1) * rates.length) / 3))),
    ),
    samples,
    rss_slope_mb_per_min: slope('rss_mb'),
    rss_slope_mb_per_min_after_60s: slope('rss_mb', 60),
    heap_used_slope_mb_per_min: slope('heap_used_mb'),
  };
}

/** W1 started here and run by `workers` worker processes on `schema`: throughput and each process's share. */
async function shared(schema: string, workers: number) {
  const children: ChildProcess[] = [];
  const tag = `w${workers}`;
  const app = await openApp(schema, false, tag);
  try {
    for (let k = 0; k < workers; k++) {
      const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'bench/fixtures/w1-worker.ts'], {
        // The same application_name: the starter counts the workers' PostgreSQL backends with its own.
        env: {
          ...process.env,
          WF_SCHEMA: schema,
          WF_APP_NAME: app.name,
          BENCH_STORE,
          CONCURRENCY: String(CONCURRENCY),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker process ${k + 1} exited with ${code}`)));
        child.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
      });
    }
    const label = `${workers} worker process${workers === 1 ? '' : 'es'}`;
    const result = await measure(app, label, { local: false, pollMs: 5 });
    // Each measured run's instances by the process that ran them (lease_owner is host:pid:random).
    const pid = MYSQL
      ? `SUBSTRING_INDEX(SUBSTRING_INDEX(lease_owner, ':', 2), ':', -1)`
      : `split_part(lease_owner, ':', 2)`;
    const rows = await check.query(
      `SELECT ${pid} AS pid, count(*) AS n FROM ${table(schema, 'instances')} WHERE id LIKE ${MYSQL ? '?' : '$1'} GROUP BY 1 ORDER BY 1`,
      [`${schema}-${tag}-%`],
    );
    const pids = children.map((child) => String(child.pid));
    const perProcess = rows.filter((row) => pids.includes(String(row.pid))).map((row) => Number(row.n));
    say(`${label}: instances per process ${perProcess.join(' / ')}`);
    return { workers, ...result, instances_per_process: perProcess, runs: REPS };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map(
        (child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve))),
      ),
    );
    await app.close();
  }
}

/**
 * PostgreSQL: the claim's plan and time with N instances due beside everything finished (they are
 * started with the worker off, explained in a transaction rolled back, then deleted), and each
 * index's size and the table's dead rows, to see bloat.
 */
async function inspect(schema: string) {
  const app = await openApp(schema, false);
  try {
    await Promise.all(Array.from({ length: N }, (_, i) => app.client.start(ThreeSteps, i, { id: `explain-${i}` })));
    const params = [
      Date.now() + 1000,
      ['bench.three-steps'],
      [1],
      CONCURRENCY,
      'explain-token',
      'explain',
      Date.now() + 30_000,
    ];
    await check.query('BEGIN');
    const plan = (await check.query(`EXPLAIN (ANALYZE, BUFFERS) ${postgresClaimStatements(schema).claim}`, params)).map(
      (row) => String(row['QUERY PLAN']),
    );
    await check.query('ROLLBACK');
    say(`claim of ${CONCURRENCY} with ${N} due:\n${plan.join('\n')}`);
    await check.query(`DELETE FROM "${schema}".instances WHERE id LIKE 'explain-%'`);
    const indexes = await check.query(
      'SELECT indexrelname AS name, pg_relation_size(indexrelid) AS bytes FROM pg_stat_user_indexes WHERE schemaname = $1 AND relname = $2 ORDER BY 1',
      [schema, 'instances'],
    );
    const table = await check.query(
      'SELECT n_live_tup AS live, n_dead_tup AS dead, autovacuum_count AS autovacuums FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
      [schema, 'instances'],
    );
    return {
      claim_execution_ms: Number(/Execution Time: ([\d.]+) ms/.exec(plan.join('\n'))?.[1]),
      claim_indexes_used: [...new Set(plan.join('\n').match(/Index (?:Only )?Scan using \w+/g) ?? [])],
      claim_seq_scans: plan.filter((line) => line.includes('Seq Scan')).length,
      index_kb: Object.fromEntries(indexes.map((row) => [row.name, Math.round(Number(row.bytes) / 1024)])),
      live_rows: Number(table[0]?.live),
      dead_rows: Number(table[0]?.dead),
      autovacuums: Number(table[0]?.autovacuums),
    };
  } finally {
    await app.close();
  }
}

const filled = `${base}_f`;
const server = String((await check.query(MYSQL ? 'SELECT VERSION() AS v' : 'SELECT version() AS v'))[0]!.v).split(
  ' on ',
)[0];
const result: Record<string, unknown> = {
  system: `@nestjs/workflows W3 (${MYSQL ? 'MySQL store' : 'PostgreSQL store'} on ${server})`,
  n: N,
  reps: REPS,
  concurrency: CONCURRENCY,
};
try {
  const sizes = [];
  // The filled schema's template: a real finished W1 instance, made by its own warm-up.
  const seed = await openApp(filled);
  await runW1(seed.client, 1, 'template-', seed.completed);
  await seed.close();
  let before = await baseline();
  for (const size of SIZES) {
    const filling = await fill(filled, size, 'template-0');
    say(`filled to ${size} finished instances (+${filling.added} in ${filling.ms} ms)`);
    const app = await openApp(filled);
    const atSize = await measure(app, `${size} finished`);
    await app.close();
    if (!MYSQL && size === SIZES.at(-1)) result.inspect_after_fill = await inspect(filled);
    const after = await baseline();
    const empty = (before.steps_per_s + after.steps_per_s) / 2;
    const emptyDb =
      before.db_cpu_ms_per_wf === undefined ? undefined : [before.db_cpu_ms_per_wf, after.db_cpu_ms_per_wf!];
    sizes.push({
      finished: size,
      fill_ms: filling.ms,
      ...atSize,
      empty_steps_per_s: [before.steps_per_s, after.steps_per_s],
      vs_empty: +(atSize.steps_per_s / empty).toFixed(2),
      ...(emptyDb ? { empty_db_cpu_ms_per_wf: emptyDb } : {}),
    });
    before = after;
  }
  result.sizes = sizes;
  result.empty_cpu_ms_per_wf = before.node_cpu_ms_per_wf;
  if (LONG_SECONDS > 0) {
    const app = await openApp(filled);
    result.long_run = await longRun(app);
    await app.close();
    say(`long run: RSS slope ${(result.long_run as { rss_slope_mb_per_min: number }).rss_slope_mb_per_min} MB/min`);
  }
  if (!MYSQL) result.inspect_at_end = await inspect(filled);
  result.worker_processes = [];
  for (const workers of WORKERS) (result.worker_processes as unknown[]).push(await shared(filled, workers));
  result.finished_at_end = await count(`SELECT count(*) AS n FROM ${table(filled, 'instances')}`);
} finally {
  for (const schema of schemas) await dropSchema(schema);
  await check.end();
}
console.log(JSON.stringify(result));
