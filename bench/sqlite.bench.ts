// Benchmarks @nestjs/workflows on SQLite, beside SQLite's own limit measured in the same run:
//   limit: the same durable one-row commit (WAL, synchronous=FULL, an UPDATE in autocommit) in a loop
//          in one process for LIMIT_SECONDS: what one fsync per commit allows this machine.
//   W1: N instances of a 3-step workflow started at once, one worker process (this one),
//       concurrency 10, until the file shows all N completed (steps/s); the longest event-loop stall
//       (and the 99th percentile of the loop's delay).
//   W2: one 3-step workflow started and awaited, W2_REPS times in a row (p50, p95 ms).
//   W1 on two worker processes sharing the file (this process only starts and counts): steps/s,
//       the instances each process finished, and the longest event-loop stall in either.
// Run: `npm run bench:sqlite` (a temp directory; about a minute).
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Database from 'better-sqlite3';
import { WorkflowClient, WorkflowEvents, WorkflowsModule } from '../src/index.js';
import { SqliteWorkflowStore } from '../src/sqlite/index.js';
import { runW1, runW2Once, STEPS, ThreeSteps } from './fixtures/w1.js';

const N = Number(process.env.N ?? 1000);
const W2_REPS = Number(process.env.W2_REPS ?? 50);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);
const LIMIT_SECONDS = Number(process.env.LIMIT_SECONDS ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-bench-sqlite-'));
const path = join(dir, 'bench.db');

/** SQLite's durable commit loop: one-row UPDATEs, each its own transaction, for `seconds`. */
function commitLimit(seconds: number): { commits_per_s: number; latency_ms: number } {
  const db = new Database(join(dir, 'limit.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
  db.exec('INSERT OR IGNORE INTO counter (id, n) VALUES (1, 0)');
  const update = db.prepare('UPDATE counter SET n = n + 1 WHERE id = 1');
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  let commits = 0;
  while (performance.now() < until) {
    update.run();
    commits++;
  }
  const elapsed = performance.now() - started;
  db.close();
  return { commits_per_s: Math.round((commits * 1000) / elapsed), latency_ms: elapsed / commits };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const reader = () => new Database(path, { readonly: true, timeout: 10_000 });

/** Completed instances whose id starts with `prefix`, read on a connection of its own. */
function completedCounter(db: Database.Database) {
  const count = db.prepare(
    "SELECT COUNT(*) AS n FROM nest_workflows_instances WHERE status = 'completed' AND substr(id, 1, ?) = ?",
  );
  return async (prefix: string) => (count.get(prefix.length, prefix) as { n: number }).n;
}

const limit = commitLimit(LIMIT_SECONDS);

@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new SqliteWorkflowStore({ path }),
      worker: { concurrency: CONCURRENCY },
    }),
  ],
  providers: [ThreeSteps],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const events = app.get(WorkflowEvents);
const db = reader();
const sqliteVersion = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
const completed = completedCounter(db);

await runW1(client, 50, 'warm-', completed);
const stalls = monitorEventLoopDelay({ resolution: 1 });
stalls.enable();
const w1 = await runW1(client, N, 'w1-', completed);
stalls.disable();
const w1MaxStallMs = stalls.max / 1e6;
const w1P99StallMs = stalls.percentile(99) / 1e6;
const w2: number[] = [];
for (let rep = 0; rep < W2_REPS; rep++) w2.push(await runW2Once(client, events, `w2-${rep}`));
await app.close();

/** What a worker process reports when it stops. */
interface Stalls {
  pid: number;
  max_stall_ms: number;
  p99_stall_ms: number;
}

/** A worker process on the file; resolves once it is ready. */
function worker(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'bench/fixtures/sqlite-worker.ts'], {
    env: { ...process.env, WF_SQLITE_PATH: path, CONCURRENCY: String(CONCURRENCY) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench worker exited early with ${code}`)));
    child.stdout!.once('data', () => resolve(child));
  });
}

/** Stops a worker; resolves to what it reported. */
function stop(child: ChildProcess): Promise<Stalls> {
  return new Promise((resolve) => {
    let out = '';
    child.removeAllListeners('exit');
    child.stdout!.on('data', (data: Buffer) => (out += data.toString()));
    child.once('exit', () => resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Stalls));
    child.kill('SIGTERM');
  });
}

// Two worker processes; this process starts the instances through a store that runs no worker.
const workers = await Promise.all([worker(), worker()]);
const starter = await NestFactory.createApplicationContext(
  (() => {
    @Module({
      imports: [WorkflowsModule.forRoot({ store: new SqliteWorkflowStore({ path }), worker: false })],
      providers: [ThreeSteps],
    })
    class StarterModule {}
    return StarterModule;
  })(),
  { logger: ['error', 'warn'] },
);
await starter.init();
const shared = await runW1(starter.get(WorkflowClient), N, 'shared-', completed, { local: false, pollMs: 20 });
const reports = await Promise.all(workers.map(stop));
const perProcess = db
  .prepare(
    "SELECT lease_owner AS owner, COUNT(*) AS n FROM nest_workflows_instances WHERE substr(id, 1, 7) = 'shared-' GROUP BY lease_owner ORDER BY n DESC",
  )
  .all() as Array<{ owner: string; n: number }>;
await starter.close();
db.close();
rmSync(dir, { recursive: true, force: true });

const result = {
  system: `@nestjs/workflows (SQLite store, better-sqlite3 ${createRequire(import.meta.url)('better-sqlite3/package.json').version}, SQLite ${sqliteVersion})`,
  limit_commits_per_s: limit.commits_per_s,
  limit_commit_latency_ms: Number(limit.latency_ms.toFixed(3)),
  w1_steps_per_s: Number(((N * STEPS * 1000) / w1.wallMs).toFixed(1)),
  w1_node_cpu_ms_per_wf: Number((w1.nodeCpuMs / N).toFixed(3)),
  w1_max_event_loop_stall_ms: Number(w1MaxStallMs.toFixed(1)),
  w1_p99_event_loop_stall_ms: Number(w1P99StallMs.toFixed(1)),
  w2_p50_ms: Number(percentile(w2, 50).toFixed(1)),
  w2_p95_ms: Number(percentile(w2, 95).toFixed(1)),
  two_processes_w1_steps_per_s: Number(((N * STEPS * 1000) / shared.wallMs).toFixed(1)),
  two_processes_instances_per_process: perProcess.map((row) => row.n),
  two_processes_max_event_loop_stall_ms: Number(Math.max(...reports.map((report) => report.max_stall_ms)).toFixed(1)),
  two_processes_p99_event_loop_stall_ms: Number(Math.max(...reports.map((report) => report.p99_stall_ms)).toFixed(1)),
};
console.log(JSON.stringify(result));
