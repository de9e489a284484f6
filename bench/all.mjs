// Every benchmark in one run, printed as one table with the limits beside the figures: PostgreSQL's
// own limit (pgbench, one single-row UPDATE per transaction, at 1 and 10 clients) measured first in
// the same run, then W1/W2 (bench/postgres.bench.ts), the cross-process start-to-running latency,
// MariaDB/MySQL with its own limit (bench/mysql.bench.ts), SQLite with its own limit (bench/sqlite.bench.ts:
// W1, W2, two worker processes on one file, the longest event-loop stall), the in-memory drain() and the engine's
// CPU per workflow. Run: `npm run bench:all` (about 5 minutes). PGBENCH_SECONDS (default 10) sets
// each pgbench run's length, W1_N (1000) W1's instances, DRAIN_N (10,000) the drain's, ENGINE_N
// (2000) the engine bench's; SKIP_MYSQL=1 leaves MariaDB out, SKIP_SQLITE=1 SQLite; SKIP_SCALE=1 leaves W3 out (bench/scale.bench.ts,
// about 5 minutes: SCALE_SIZES, SCALE_LONG_SECONDS, SCALE_REPS, SCALE_WORKERS size it); SKIP_WAITING=1 leaves W5
// out (bench/waiting.bench.ts on PostgreSQL, WAITING_N waiting and as many finished, 100,000: about 8 minutes). Other variables (W2_REPS, REPS...)
// reach the benches as they are. The pgbench tables live in a database
// of their own, `workflows_pgbench` (created when missing), never in the tests' database.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PGBENCH_SECONDS = Number(process.env.PGBENCH_SECONDS ?? 10);
const PGBENCH_DB = 'workflows_pgbench';
const W1_N = Number(process.env.W1_N ?? 1000);
const DRAIN_N = Number(process.env.DRAIN_N ?? 10_000);
const ENGINE_N = Number(process.env.ENGINE_N ?? 2000);
const BIN = process.env.PG_BINDIR ?? '/usr/lib/postgresql/15/bin';
const pgEnv = {
  ...process.env,
  PGHOST: process.env.PGHOST ?? '127.0.0.1',
  PGPORT: process.env.PGPORT ?? '5432',
  PGUSER: process.env.PGUSER ?? 'postgres',
};

function say(message) {
  process.stderr.write(
    `[bench:all ${new Date().toISOString().slice(11, 19)} load ${loadavg()[0].toFixed(1)}] ${message}\n`,
  );
}

function run(command, args, env = process.env) {
  const result = spawnSync(command, args, {
    cwd: root,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 << 20,
  });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}:\n${result.stdout}`);
  return result.stdout;
}

/** Runs one bench/*.bench.ts and returns the JSON object on its last line of output. */
function bench(file, env = {}) {
  return benchArgs(file, [], env);
}

/** `bench()` with command-line arguments for the bench. */
function benchArgs(file, args, env = {}) {
  say(`${file} ${args.join(' ')}`);
  const out = run(process.execPath, ['--import', './scripts/register-ts.mjs', `bench/${file}`, ...args], {
    ...process.env,
    ...env,
  });
  const line = out
    .trim()
    .split('\n')
    .reverse()
    .find((text) => text.startsWith('{'));
  if (!line) throw new Error(`bench/${file} printed no JSON result:\n${out}`);
  return JSON.parse(line);
}

function psql(database, sql) {
  return run('psql', ['-X', '-Atq', '-v', 'ON_ERROR_STOP=1', '-d', database, '-c', sql], pgEnv).trim();
}

/** pgbench's one-statement transactions at `clients`: { tps, latencyMs } over PGBENCH_SECONDS. */
function pgbench(clients, seconds = PGBENCH_SECONDS) {
  const jobs = String(Math.min(clients, 2));
  const out = run(
    pgbenchBin(),
    ['-n', '-f', 'bench/pgbench-update1.sql', '-c', String(clients), '-j', jobs, '-T', String(seconds), PGBENCH_DB],
    pgEnv,
  );
  const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
  const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(out)?.[1]);
  if (!Number.isFinite(tps) || !Number.isFinite(latencyMs))
    throw new Error(`pgbench printed no tps or latency:\n${out}`);
  return { tps, latencyMs };
}

function pgbenchBin() {
  try {
    execFileSync(`${BIN}/pgbench`, ['--version'], { stdio: 'ignore' });
    return `${BIN}/pgbench`;
  } catch {
    return 'pgbench';
  }
}

const startedAt = new Date();
const machine = `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const loads = [loadavg()[0]];

say(`pgbench limit (${PGBENCH_SECONDS} s per run, database ${PGBENCH_DB})`);
if (psql('postgres', `SELECT count(*) FROM pg_database WHERE datname = '${PGBENCH_DB}'`) === '0')
  psql('postgres', `CREATE DATABASE ${PGBENCH_DB}`);
run(pgbenchBin(), ['-i', '-s', '1', '-q', PGBENCH_DB], pgEnv);
psql(PGBENCH_DB, 'VACUUM ANALYZE pgbench_accounts');
const pgVersion = psql(PGBENCH_DB, 'SHOW server_version');
const syncCommit = psql(PGBENCH_DB, 'SHOW synchronous_commit');
pgbench(10, 5); // warm-up, unmeasured: every page has had its first write after the checkpoint
const pg1 = pgbench(1);
const pg10 = pgbench(10);
loads.push(loadavg()[0]);

const pg = bench('postgres.bench.ts', { N: String(W1_N) });
loads.push(loadavg()[0]);
const latency = bench('cross-process.bench.ts');
const scale = process.env.SKIP_SCALE ? null : bench('scale.bench.ts', { N: String(W1_N) });
loads.push(loadavg()[0]);
/** W5 (bench/waiting.bench.ts) on PostgreSQL, WAITING_N waiting and as many finished instances (100,000). */
const WAITING_N = String(process.env.WAITING_N ?? 100_000);
const waiting = process.env.SKIP_WAITING
  ? null
  : benchArgs('waiting.bench.ts', ['--store', 'postgres', '--waiting', WAITING_N, '--finished', WAITING_N], {
      N: String(W1_N),
    });
loads.push(loadavg()[0]);
const mysql = process.env.SKIP_MYSQL ? null : bench('mysql.bench.ts', { N: String(W1_N) });
loads.push(loadavg()[0]);
const sqlite = process.env.SKIP_SQLITE ? null : bench('sqlite.bench.ts', { N: String(W1_N) });
loads.push(loadavg()[0]);
const drain = bench('drain.bench.ts', { N: String(DRAIN_N) });
const engine = bench('engine-cpu.bench.ts', { N: String(ENGINE_N) });
loads.push(loadavg()[0]);

const fsyncFloor = 4 * pg1.latencyMs;
const mysqlFloor = mysql ? 4 * (1000 / mysql.limit_update_commits_per_s_1_client) : null;
const fixed = (value, digits = 1) => (value === null || value === undefined ? 'n/a' : Number(value).toFixed(digits));
const ratio = (value) => `${value.toFixed(2)}x`;
const met = (ok) => (ok ? 'yes' : '**no**');
/** A W1 total in ms, per workflow (`null` stays `null`: printed n/a). */
const perWorkflow = (ms) => (ms === null || ms === undefined ? null : ms / W1_N);

const rows = [
  [
    'PostgreSQL limit: pgbench 1-statement tx, 1 client',
    `${fixed(pg1.tps, 0)} TPS, ${fixed(pg1.latencyMs, 2)} ms`,
    '',
    '',
    '',
  ],
  [
    'PostgreSQL limit: pgbench 1-statement tx, 10 clients',
    `${fixed(pg10.tps, 0)} TPS, ${fixed(pg10.latencyMs, 2)} ms`,
    '',
    '',
    '',
  ],
  [
    `W1 steps/s (${W1_N} x 3 steps, concurrency 10)`,
    fixed(pg.w1_steps_per_s),
    `${fixed(pg10.tps, 0)} (10-client TPS)`,
    ratio(pg.w1_steps_per_s / pg10.tps),
    `>= 1.00x: ${met(pg.w1_steps_per_s >= pg10.tps)}`,
  ],
  [
    "W1 Node CPU ms per workflow (main thread + other threads: V8's compiler, GC helpers)",
    `${fixed(perWorkflow(pg.w1_node_cpu_ms), 3)} (${fixed(perWorkflow(pg.w1_node_main_thread_ms), 3)} + ${fixed(perWorkflow(pg.w1_node_other_threads_ms), 3)})`,
    '',
    '',
    '',
  ],
  [
    'W1 commits per workflow (WAL)',
    fixed(pg.w1_wal_commits_per_wf, 2),
    '',
    '',
    "not above 0.40 (2026-11-29); the WAL holds every session's commits",
  ],
  [
    'W2 p50 ms (one 3-step workflow, start to end)',
    fixed(pg.w2_p50_ms),
    `${fixed(fsyncFloor, 2)} (4 x 1-client latency)`,
    ratio(pg.w2_p50_ms / fsyncFloor),
    `<= 2.00x: ${met(pg.w2_p50_ms <= 2 * fsyncFloor)}`,
  ],
  ['W2 p95 ms', fixed(pg.w2_p95_ms), '', ratio(pg.w2_p95_ms / fsyncFloor), ''],
  [
    'W2 p50 ms against four one-row commits from Node (pg), back to back',
    fixed(pg.w2_p50_ms),
    `${fixed(pg.w2_node_four_commits_p50_ms, 2)}`,
    ratio(pg.w2_p50_ms / pg.w2_node_four_commits_p50_ms),
    '',
  ],
  ['W2 commits per workflow (WAL)', fixed(pg.w2_wal_commits_per_wf, 2), '', '', 'not above 4 (2026-11-29)'],
  [
    'cross-process start-to-running p50 ms (NOTIFY)',
    fixed(latency.p50_ms),
    `${fixed(latency.floor_two_commits.p50_ms, 2)} (2 one-row commits after the same idle gap)`,
    ratio(latency.p50_x_floor),
    `<= 3 ms: ${met(latency.p50_ms <= 3)}`,
  ],
  ['cross-process start-to-running p95 ms', fixed(latency.p95_ms), '', '', ''],
];
if (scale) {
  for (const size of scale.sizes) {
    rows.push([
      `W3: W1 steps/s with ${size.finished} finished instances in the table`,
      fixed(size.steps_per_s),
      `${fixed((size.empty_steps_per_s[0] + size.empty_steps_per_s[1]) / 2)} (W1, empty table, before/after)`,
      ratio(size.vs_empty),
      `>= 0.90x: ${met(size.vs_empty >= 0.9)}`,
    ]);
  }
  if (scale.long_run) {
    const rss = scale.long_run.samples.map((sample) => Math.round(sample.rss_mb));
    rows.push([
      `W3: RSS MB every 10 s over ${scale.long_run.seconds} s of W1`,
      `${rss.join(', ')}`,
      '',
      `${fixed(scale.long_run.rss_slope_mb_per_min, 2)} MB/min (${fixed(scale.long_run.rss_slope_mb_per_min_after_60s, 2)} after 60 s)`,
      // GC swings the samples by tens of MB; a leak of 1 kB per workflow would climb about 30 MB/min here.
      `flat, <= 5 MB/min: ${met(scale.long_run.rss_slope_mb_per_min <= 5)}`,
    ]);
  }
  for (const shared of scale.worker_processes) {
    rows.push([
      `W3: W1 steps/s, ${shared.workers} worker process${shared.workers === 1 ? '' : 'es'} (instances each)`,
      `${fixed(shared.steps_per_s)} (${shared.instances_per_process.join(' / ')})`,
      '',
      '',
      '',
    ]);
  }
}
if (waiting) {
  const w5 = (label, value, limit, ok) =>
    rows.push([
      `W5 (${WAITING_N} waiting + ${WAITING_N} finished): ${label}`,
      value,
      'same, empty table',
      '',
      `${limit}: ${met(ok)}`,
    ]);
  w5('W1 steps/s, filled / empty', ratio(waiting.w1_ratio), '>= 0.90x', waiting.w1_ratio >= 0.9);
  w5(
    'claim p50 with nothing due, filled / empty',
    ratio(waiting.claim_p50_ratio),
    '<= 1.5x',
    waiting.claim_p50_ratio <= 1.5,
  );
  w5(
    'signal -> next step p50, filled / empty',
    ratio(waiting.signal_p50_ratio),
    '<= 1.5x',
    waiting.signal_p50_ratio <= 1.5,
  );
  w5(
    'one signal waking 10,000: steps/s / W1 steps/s',
    ratio(waiting.fanout_vs_w1),
    '>= 0.80x',
    waiting.fanout_vs_w1 >= 0.8,
  );
  w5(
    'rows the claim read with nothing due',
    fixed(waiting.rows_read_per_claim, 0),
    '<= 10 (its limit)',
    waiting.rows_read_per_claim <= 10,
  );
}
if (mysql) {
  rows.push(
    [
      'MariaDB limit: 1-row UPDATE commits/s, 1 / 10 clients',
      `${mysql.limit_update_commits_per_s_1_client} / ${mysql.limit_update_commits_per_s_10_clients}`,
      '',
      '',
      '',
    ],
    [
      'MariaDB W1 steps/s',
      fixed(mysql.w1_steps_per_s),
      `${mysql.limit_update_commits_per_s_10_clients} (10 clients)`,
      ratio(mysql.w1_steps_per_s / mysql.limit_update_commits_per_s_10_clients),
      `>= 0.50x (issue 10): ${met(mysql.w1_steps_per_s >= 0.5 * mysql.limit_update_commits_per_s_10_clients)}; >= 1.00x (issue 15): ${met(mysql.w1_steps_per_s >= mysql.limit_update_commits_per_s_10_clients)}`,
    ],
    [
      'MariaDB W1 steady steps/s (the same W1 after 3,000 more workflows: a warm process)',
      fixed(mysql.w1_steady_steps_per_s),
      `${mysql.limit_update_commits_per_s_10_clients} (10 clients)`,
      ratio(mysql.w1_steady_steps_per_s / mysql.limit_update_commits_per_s_10_clients),
      '',
    ],
    [
      'MariaDB W1 steps/s against the 10-client limit measured just before and after it, first / steady',
      `${fixed(mysql.w1_steps_per_s)} / ${fixed(mysql.w1_steady_steps_per_s)}`,
      `${mysql.w1_limit_10_clients_before_after.join('-')} / ${mysql.w1_steady_limit_10_clients_before_after.join('-')}`,
      `${ratio(mysql.w1_steps_per_s_vs_limit_around)} / ${ratio(mysql.w1_steady_steps_per_s_vs_limit_around)}`,
      `>= 0.50x: ${met(mysql.w1_steps_per_s_vs_limit_around >= 0.5)} / ${met(mysql.w1_steady_steps_per_s_vs_limit_around >= 0.5)}`,
    ],
    [
      'MariaDB W1 Node CPU ms per workflow, first / steady (main thread + other threads)',
      `${fixed(mysql.w1_node_cpu_ms_per_wf, 3)} (${fixed(mysql.w1_node_main_thread_ms_per_wf, 3)} + ${fixed(mysql.w1_node_other_threads_ms_per_wf, 3)}) / ${fixed(mysql.w1_steady_node_cpu_ms_per_wf, 3)} (${fixed(mysql.w1_steady_node_main_thread_ms_per_wf, 3)} + ${fixed(mysql.w1_steady_node_other_threads_ms_per_wf, 3)})`,
      '',
      '',
      '',
    ],
    [
      'MariaDB W2 p50 ms',
      fixed(mysql.w2_p50_ms),
      `${fixed(mysqlFloor, 2)} (4 x 1-client commit)`,
      ratio(mysql.w2_p50_ms / mysqlFloor),
      `<= 2.00x: ${met(mysql.w2_p50_ms <= 2 * mysqlFloor)}`,
    ],
    [
      'MariaDB commits per workflow, W1 / W2',
      `${fixed(mysql.w1_commits_per_wf, 2)} / ${fixed(mysql.w2_commits_per_wf, 2)}`,
      '',
      '',
      '',
    ],
    [
      'MariaDB statements (round trips) per workflow, W1 / W2',
      `${fixed(mysql.w1_statements_per_wf, 2)} / ${fixed(mysql.w2_statements_per_wf, 2)}`,
      '',
      '',
      '',
    ],
  );
}
if (sqlite) {
  const sqliteFloor = 4 * sqlite.limit_commit_latency_ms;
  rows.push(
    [
      'SQLite limit: durable 1-row UPDATE commits/s in one process (WAL, synchronous=FULL)',
      `${sqlite.limit_commits_per_s} (${fixed(sqlite.limit_commit_latency_ms, 2)} ms each)`,
      '',
      '',
      '',
    ],
    [
      'SQLite W1 steps/s (one worker process)',
      fixed(sqlite.w1_steps_per_s),
      `${sqlite.limit_commits_per_s} (commit loop)`,
      ratio(sqlite.w1_steps_per_s / sqlite.limit_commits_per_s),
      '',
    ],
    [
      'SQLite W1 steps/s, two worker processes on one file (instances each)',
      `${fixed(sqlite.two_processes_w1_steps_per_s)} (${sqlite.two_processes_instances_per_process.join(' / ')})`,
      `${sqlite.limit_commits_per_s} (commit loop)`,
      ratio(sqlite.two_processes_w1_steps_per_s / sqlite.limit_commits_per_s),
      '',
    ],
    ['SQLite W1 Node CPU ms per workflow', fixed(sqlite.w1_node_cpu_ms_per_wf, 3), '', '', ''],
    [
      'SQLite W2 p50 / p95 ms',
      `${fixed(sqlite.w2_p50_ms)} / ${fixed(sqlite.w2_p95_ms)}`,
      `${fixed(sqliteFloor, 2)} (4 x one commit)`,
      ratio(sqlite.w2_p50_ms / sqliteFloor),
      '',
    ],
    [
      'SQLite event-loop stall ms, longest (99th percentile): one process / either of two on one file',
      `${fixed(sqlite.w1_max_event_loop_stall_ms)} (${fixed(sqlite.w1_p99_event_loop_stall_ms)}) / ${fixed(sqlite.two_processes_max_event_loop_stall_ms)} (${fixed(sqlite.two_processes_p99_event_loop_stall_ms)})`,
      '',
      '',
      '',
    ],
  );
}
// The drain's target is in CPU per instance (wall time on a shared machine measures the others'
// load): 100 us, about what the engine itself spends on a three-step workflow (bench:engine), so
// the store's claims add little and do not grow with the finished instances it holds.
const DRAIN_TARGET_US = 100;
const drainUs = (cpuMs) => (cpuMs * 1000) / drain.n;
rows.push(
  [
    `in-memory drain() of ${drain.n} three-step instances: wall ms (CPU ms)`,
    `${drain.first_drain_ms} (${drain.first_drain_cpu_ms})`,
    '',
    `${fixed(drainUs(drain.first_drain_cpu_ms))} us CPU/instance`,
    `<= ${DRAIN_TARGET_US} us: ${met(drainUs(drain.first_drain_cpu_ms) <= DRAIN_TARGET_US)}`,
  ],
  [
    `the same, the store already holding ${drain.n * (drain.drains.length - 1)} finished`,
    `${drain.last_drain_ms} (${drain.last_drain_cpu_ms})`,
    '',
    `${fixed(drainUs(drain.last_drain_cpu_ms))} us CPU/instance`,
    `<= ${DRAIN_TARGET_US} us: ${met(drainUs(drain.last_drain_cpu_ms) <= DRAIN_TARGET_US)}`,
  ],
  ['engine CPU us per 3-step workflow (in-memory)', fixed(engine.three_steps_cpu_us_per_wf), '', '', ''],
  ['engine CPU us per workflow with a sleep and a replay', fixed(engine.sleep_replay_cpu_us_per_wf), '', '', ''],
);

const lines = [
  `Run ${startedAt.toISOString()} to ${new Date().toISOString()}; ${machine}; PostgreSQL ${pgVersion} (synchronous_commit=${syncCommit})` +
    `${mysql ? `; ${mysql.system.replace('@nestjs/workflows (MySQL store on ', 'MariaDB/MySQL ').replace(/\)$/, '')}` : ''}` +
    `${sqlite ? `; ${sqlite.system.replace('@nestjs/workflows (SQLite store, ', '').replace(/\)$/, '')}` : ''}` +
    `; load average ${loads.map((load) => load.toFixed(1)).join(', ')} (start, after pgbench, after W1/W2, after W3, after MySQL, after SQLite, end).`,
  '',
  '| measure | ours | limit | ours / limit | target |',
  '|---|---|---|---|---|',
  ...rows.map((row) => `| ${row.join(' | ')} |`),
];
console.log(lines.join('\n'));
console.log(
  JSON.stringify({
    pgbench: { one_client: pg1, ten_clients: pg10 },
    postgres: pg,
    latency,
    scale,
    waiting,
    mysql,
    sqlite,
    drain,
    engine,
  }),
);
