// Cross-process start-to-running latency: this process starts instances (its worker is off); another
// process, whose worker polls every 1 s (the default), runs them. The time from the start() call to the
// first step running in the other process shows the cross-process wake-up (LISTEN/NOTIFY on PostgreSQL,
// the adaptive poll on MySQL): without it, it would average half the poll interval. It also times
// the other way: from that step to handle.result() resolving here, which shows the cross-process
// end notification (NOTIFY on PostgreSQL, the poll of awaited instances on MySQL); a result() that
// must find the end by reading its instance averages half of its 500 ms poll.
// Run: `npm run bench:latency` (PostgreSQL), `BENCH_STORE=mysql npm run bench:latency` (MariaDB/MySQL);
// with SAME_PROCESS=1 this process's own worker runs them instead (the local wake-ups and end events).
// With HOPS=1 (PostgreSQL, two processes) it also prints where a start-to-running goes, hop by hop
// (bench/fixtures/pg-hops.ts): medians of the create's round trip, the notification's delivery, the
// worker's reaction, the claim's round trip and the start of the step.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { BENCH_STORE, benchStore } from './fixtures/bench-store.js';
import { commitFloor } from './fixtures/commit-floor.js';
import { LatencyProbe } from './fixtures/latency-workflow.js';

const REPS = Number(process.env.REPS ?? 50);
const schema = `bench_latency_${Date.now().toString(36)}`;
const { store, end } = benchStore(schema);
const SAME_PROCESS = process.env.SAME_PROCESS === '1';
const hopsDir =
  process.env.HOPS === '1' && !SAME_PROCESS && BENCH_STORE === 'postgres' ? mkdtempSync(join(tmpdir(), 'hops-')) : null;
if (hopsDir) process.env.HOPS_FILE = join(hopsDir, 'hops.txt');
const hops = hopsDir ? await import('./fixtures/pg-hops.js') : null;

@Module({
  imports: [WorkflowsModule.forRoot({ store, worker: SAME_PROCESS ? {} : false })],
  providers: [LatencyProbe],
})
class StarterModule {}

const app = await NestFactory.createApplicationContext(StarterModule, { logger: ['error'] });
await app.init(); // migrates the schema before the worker starts
const client = app.get(WorkflowClient);

const worker = SAME_PROCESS
  ? null
  : spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'bench/fixtures/latency-worker.ts'], {
      env: { ...process.env, WF_SCHEMA: schema, BENCH_STORE },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
if (worker) {
  await new Promise<void>((resolve, reject) => {
    worker.once('exit', (code) => reject(new Error(`the worker exited with ${code}`)));
    worker.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
  });
}

const floor = await commitFloor(BENCH_STORE, schema);
const gap = () => new Promise((resolve) => setTimeout(resolve, 37 + Math.random() * 200));
const latencies: number[] = [];
const endLatencies: number[] = [];
const floors: number[] = [];
for (let k = -3; k < REPS; k++) {
  // The floor's two commits after a gap of the same kind, alternating with the starts.
  await gap();
  const twoCommits = await floor.probe();
  if (k >= 0) floors.push(twoCommits);
  // Spread the starts over the poll cycle, so polling alone would average half its interval.
  await gap();
  const startedAt = performance.timeOrigin + performance.now();
  hops?.hop('start', startedAt);
  const handle = await client.start(LatencyProbe, null, { id: `latency-${k}` });
  const ranAt = (await handle.result({ timeout: '10s' })) as number;
  hops?.hop('ran', ranAt);
  const resolvedAt = performance.timeOrigin + performance.now();
  if (k >= 0) {
    latencies.push(ranAt - startedAt);
    endLatencies.push(resolvedAt - ranAt);
  }
}

const percentiles = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return { p50_ms: +at(50).toFixed(1), p95_ms: +at(95).toFixed(1), max_ms: +sorted[sorted.length - 1]!.toFixed(1) };
};
console.log(
  JSON.stringify({
    system: `@nestjs/workflows (${BENCH_STORE === 'mysql' ? 'MySQL' : 'PostgreSQL'}), ${SAME_PROCESS ? 'start and run in one process' : 'start in one process, run in another'}`,
    reps: REPS,
    poll_interval_ms: 1000,
    ...percentiles(latencies),
    // Two one-row commits, one after the other, after the same kind of gap: what a start can't go under.
    floor_two_commits: percentiles(floors),
    p50_x_floor: +(percentiles(latencies).p50_ms / percentiles(floors).p50_ms).toFixed(2),
    // From the step in the other process to result() resolving here: the end write, then its notification.
    step_to_result: percentiles(endLatencies),
    ...(hops ? { hops_median_ms: hops.hopsOf(process.env.HOPS_FILE!, 3) } : {}),
  }),
);

if (worker) {
  worker.kill('SIGTERM');
  await new Promise((resolve) => worker.once('exit', resolve));
}
await app.close();
await floor.end();
await end({ drop: true });
if (hopsDir) rmSync(hopsDir, { recursive: true });
