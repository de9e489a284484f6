// W4, signal throughput and latency on PostgreSQL: N instances each wait for a `go` signal with a
// key of their own, in WORKERS worker processes (concurrency 10 each); SENDERS concurrent senders in
// another process signal every key once, as fast as they can. Reports signals/s (sender side) and
// signal-to-resume p50/p95 (the step after the wait running, in whichever worker).
// With STOP_MS (e.g. 5000): STOP_AT ms after the first signal, one worker process is stopped with
// SIGSTOP for STOP_MS, then continued; the figures are then also given inside that window against the
// window of the same length before it, for the senders and for the workers that kept running.
// With RATE, the senders keep to that many signals per second in all: the latency then shows the
// signal path rather than a queue of resumes behind senders faster than the workers.
// Run: `npm run bench:signals` (PostgreSQL at PGHOST/PGPORT, user postgres, database test).
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { AwaitGo, type Resumed } from './fixtures/signal-workflow.js';
import { createPool } from '../test/support/postgres.js';

const STOP_MS = Number(process.env.STOP_MS ?? 0);
const STOP_AT = Number(process.env.STOP_AT ?? 8000);
const N = Number(process.env.N ?? (STOP_MS > 0 ? 8000 : 1000));
const WORKERS = Number(process.env.WORKERS ?? 3);
const SENDERS = Number(process.env.SENDERS ?? 10);
const schema = `bench_w4_${Date.now().toString(36)}`;
const pool = createPool({ max: 4 });

@Module({
  imports: [
    WorkflowsModule.forRoot({ store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }), worker: false }),
  ],
  providers: [AwaitGo],
})
class StarterModule {}

const app = await NestFactory.createApplicationContext(StarterModule, { logger: ['error'] });
await app.init(); // migrates before any worker starts
const client = app.get(WorkflowClient);

function spawnReady(file: string, stdin: 'ignore' | 'pipe' = 'ignore'): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', file], {
    env: { ...process.env, WF_SCHEMA: schema, N: String(N), SENDERS: String(SENDERS), RATE: process.env.RATE ?? '0' },
    stdio: [stdin, 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited early with ${code}`)));
    child.stdout!.once('data', (data: Buffer) =>
      data.toString().includes('ready') ? resolve(child) : reject(new Error(String(data))),
    );
  });
}

const count = async (status: string) =>
  Number(
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".instances WHERE status = $1`, [status])).rows[0].n,
  );

for (let i = 0; i < N; i += 200) {
  await Promise.all(
    Array.from({ length: Math.min(200, N - i) }, (_, j) => client.start(AwaitGo, `k${i + j}`, { id: `w4-${i + j}` })),
  );
}
const workers = await Promise.all(Array.from({ length: WORKERS }, () => spawnReady('bench/fixtures/signal-worker.ts')));
while ((await count('suspended')) < N) await new Promise((resolve) => setTimeout(resolve, 50));
await pool.query(`VACUUM ANALYZE "${schema}".instances`);
await pool.query('CHECKPOINT');

const sender = await spawnReady('bench/fixtures/signal-sender.ts', 'pipe');
let report = '';
sender.stdout!.on('data', (data: Buffer) => (report += data.toString()));
const senderDone = new Promise<void>((resolve) => sender.once('exit', () => resolve()));
const goAt = Date.now();
sender.stdin!.end('go\n');

let stopWindow: [number, number] | null = null;
const stopped = workers[0]!;
if (STOP_MS > 0) {
  await new Promise((resolve) => setTimeout(resolve, STOP_AT));
  const from = Date.now();
  stopped.kill('SIGSTOP');
  await new Promise((resolve) => setTimeout(resolve, STOP_MS));
  stopped.kill('SIGCONT');
  stopWindow = [from, Date.now()];
}
await senderDone;
while ((await count('completed')) < N) await new Promise((resolve) => setTimeout(resolve, 50));

const { first, last, sends } = JSON.parse(report.trim().split('\n').pop()!) as {
  first: number;
  last: number;
  sends: Array<[number, number]>;
};
const { rows } = await pool.query(`SELECT output::text AS output FROM "${schema}".instances WHERE id LIKE 'w4-%'`);
const resumed = rows.map((row) => JSON.parse(row.output as string) as Resumed);
const latencies = resumed.map((r) => r.resumedAt - r.sentAt);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const perS = (n: number, ms: number) => +((n * 1000) / ms).toFixed(1);

const result: Record<string, unknown> = {
  system: '@nestjs/workflows (PostgreSQL), W4',
  instances: N,
  worker_processes: WORKERS,
  senders: SENDERS,
  rate: Number(process.env.RATE ?? 0) || 'unpaced',
  signals_per_s: perS(N, last - first),
  signal_call_p50_ms: percentile(
    sends.map(([, ms]) => ms),
    50,
  ),
  signal_call_p95_ms: percentile(
    sends.map(([, ms]) => ms),
    95,
  ),
  signal_to_resume_p50_ms: percentile(latencies, 50),
  signal_to_resume_p95_ms: percentile(latencies, 95),
  all_resumed_ms: Math.max(...resumed.map((r) => r.resumedAt)) - goAt,
};
if (stopWindow) {
  const [from, to] = stopWindow;
  const length = to - from;
  const before: [number, number] = [from - length, from];
  const inWindow = (at: number, [a, b]: [number, number]) => at >= a && at < b;
  const others = resumed.filter((r) => r.pid !== stopped.pid);
  Object.assign(result, {
    stop_ms: length,
    stopped_after_ms: from - first,
    window_before_ms: before,
    signals_per_s_before: perS(sends.filter(([at]) => inWindow(at, before)).length, length),
    signals_per_s_stopped: perS(sends.filter(([at]) => inWindow(at, [from, to])).length, length),
    others_resumes_per_s_before: perS(others.filter((r) => inWindow(r.resumedAt, before)).length, length),
    others_resumes_per_s_stopped: perS(others.filter((r) => inWindow(r.resumedAt, [from, to])).length, length),
    stopped_worker_resumes_total: resumed.length - others.length,
  });
}
console.log(JSON.stringify(result));

for (const worker of workers) worker.kill('SIGTERM');
await Promise.all(
  workers.map(
    (worker) => new Promise((resolve) => (worker.exitCode !== null ? resolve(null) : worker.once('exit', resolve))),
  ),
);
await app.close();
await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
await pool.end();
