// Cross-process start-to-running latency: this process starts instances (its worker is off); another
// process, whose worker polls every 1 s (the default), runs them. The time from the start() call to the
// first step running in the other process shows the cross-process wake-up (LISTEN/NOTIFY on PostgreSQL,
// the adaptive poll on MySQL): without it, it would average half the poll interval.
// Run: `npm run bench:latency` (PostgreSQL), `BENCH_STORE=mysql npm run bench:latency` (MariaDB/MySQL).
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { BENCH_STORE, benchStore } from './fixtures/bench-store.js';
import { LatencyProbe } from './fixtures/latency-workflow.js';

const REPS = Number(process.env.REPS ?? 50);
const schema = `bench_latency_${Date.now().toString(36)}`;
const { store, end } = benchStore(schema);

@Module({
  imports: [WorkflowsModule.forRoot({ store, worker: false })],
  providers: [LatencyProbe],
})
class StarterModule {}

const app = await NestFactory.createApplicationContext(StarterModule, { logger: ['error'] });
await app.init(); // migrates the schema before the worker starts
const client = app.get(WorkflowClient);

const worker = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'bench/fixtures/latency-worker.ts'], {
  env: { ...process.env, WF_SCHEMA: schema, BENCH_STORE },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve, reject) => {
  worker.once('exit', (code) => reject(new Error(`the worker exited with ${code}`)));
  worker.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
});

const latencies: number[] = [];
for (let k = -3; k < REPS; k++) {
  // Spread the starts over the poll cycle, so polling alone would average half its interval.
  await new Promise((resolve) => setTimeout(resolve, 37 + Math.random() * 200));
  const startedAt = performance.timeOrigin + performance.now();
  const handle = await client.start(LatencyProbe, null, { id: `latency-${k}` });
  const ranAt = (await handle.result({ timeout: '10s' })) as number;
  if (k >= 0) latencies.push(ranAt - startedAt);
}

const sorted = [...latencies].sort((a, b) => a - b);
const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
console.log(
  JSON.stringify({
    system: `@nestjs/workflows (${BENCH_STORE === 'mysql' ? 'MySQL' : 'PostgreSQL'}), start in one process, run in another`,
    reps: REPS,
    poll_interval_ms: 1000,
    p50_ms: +at(50).toFixed(1),
    p95_ms: +at(95).toFixed(1),
    max_ms: +sorted[sorted.length - 1]!.toFixed(1),
  }),
);

worker.kill('SIGTERM');
await new Promise((resolve) => worker.once('exit', resolve));
await app.close();
await end({ drop: true });
