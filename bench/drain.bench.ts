// The in-memory store as a user's test suite uses it: N three-step instances started (worker off),
// then one `drain()` that runs them all, timed (wall and the process's CPU). The store starts
// empty for the first drain and holds the earlier drains' finished instances for the next ones,
// as a test suite's store does. Run: `npm run bench:drain` (N=10000 DRAINS=3 by default).
//
// The first drain of a fresh process pays what only a fresh process pays (V8 compiling and
// optimizing the engine's code, the heap growing to hold the instances); WARMUP=n drains n instances
// first, in the same process and store, so the first measured drain shows the cost per instance
// once that is paid (the profile that tells the two apart is in bench/RESULTS.md's history:
// `git show 619f6f0:bench/RESULTS.md`, "the first drain() and the old generation").
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  InMemoryWorkflowStore,
  ManualWorkflowClock,
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
} from '../src/index.js';

const N = Number(process.env.N ?? 10_000);
const DRAINS = Number(process.env.DRAINS ?? 3);
const WARMUP = Number(process.env.WARMUP ?? 0);

@Injectable()
@Workflow('bench.drain.three-steps')
class ThreeSteps {
  async run(ctx: WorkflowContext, i: number) {
    const outputs = [];
    for (let step = 1; step <= 3; step++) outputs.push(await ctx.step(`step-${step}`, () => ({ i, step })));
    return outputs;
  }
}

@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new InMemoryWorkflowStore(),
      clock: new ManualWorkflowClock(Date.UTC(2026, 0, 1)),
      worker: false,
    }),
  ],
  providers: [ThreeSteps],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const worker = app.get(WorkflowWorker);

if (WARMUP > 0) {
  await Promise.all(Array.from({ length: WARMUP }, (_, i) => client.start(ThreeSteps, i, { id: `warmup-${i}` })));
  if ((await worker.drain()) !== WARMUP) throw new Error('the warm-up drain did not run every instance');
}

const drains: Array<{ drain_ms: number; drain_cpu_ms: number; start_ms: number; ran: number }> = [];
for (let d = 0; d < DRAINS; d++) {
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: N }, (_, i) => client.start(ThreeSteps, i, { id: `d${d}-${i}` })));
  const drainAt = performance.now();
  const cpu = process.cpuUsage();
  const ran = await worker.drain();
  const used = process.cpuUsage(cpu);
  if (ran !== N) throw new Error(`drain ran ${ran} instances, expected ${N}`);
  drains.push({
    start_ms: Math.round(drainAt - startedAt),
    drain_ms: Math.round(performance.now() - drainAt),
    drain_cpu_ms: Math.round((used.user + used.system) / 1000),
    ran,
  });
}
await app.close();

console.log(
  JSON.stringify({
    system: '@nestjs/workflows drain() (in-memory store)',
    n: N,
    warmup: WARMUP,
    first_drain_cpu_us_per_instance: Number(((drains[0]!.drain_cpu_ms * 1000) / N).toFixed(1)),
    first_drain_ms: drains[0]!.drain_ms,
    first_drain_cpu_ms: drains[0]!.drain_cpu_ms,
    last_drain_ms: drains.at(-1)!.drain_ms,
    last_drain_cpu_ms: drains.at(-1)!.drain_cpu_ms,
    starts_ms: drains[0]!.start_ms,
    drains,
  }),
);
