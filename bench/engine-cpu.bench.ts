// The engine's own cost, without a database: N three-step workflows started and run to their end on
// the in-memory store with `drain()`, then again N workflows whose step sleeps once (two executions:
// a replay of the journal). Reports the Node process's CPU time per workflow, which a busy machine
// disturbs far less than wall time, so two commits can be compared on a shared machine.
// Run: `npm run bench:engine` (N=2000 ROUNDS=5 by default).
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

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

@Injectable()
@Workflow('bench.engine.three-steps')
class ThreeSteps {
  async run(ctx: WorkflowContext, i: number) {
    const outputs = [];
    for (let step = 1; step <= 3; step++) outputs.push(await ctx.step(`step-${step}`, () => ({ i, step })));
    return outputs;
  }
}

@Injectable()
@Workflow('bench.engine.sleeper')
class Sleeper {
  async run(ctx: WorkflowContext, i: number) {
    const a = await ctx.step('a', () => ({ i }));
    await ctx.sleep('pause', '1m');
    const b = await ctx.step('b', () => ({ i, after: true }));
    return [a, b];
  }
}

const clock = new ManualWorkflowClock(Date.UTC(2026, 0, 1));

@Module({
  imports: [WorkflowsModule.forRoot({ store: new InMemoryWorkflowStore(), clock, worker: false })],
  providers: [ThreeSteps, Sleeper],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const worker = app.get(WorkflowWorker);

/** CPU microseconds (user + system) that `fn` takes. */
async function cpu(fn: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

const threeSteps: number[] = [];
const replays: number[] = [];
for (let round = 0; round <= ROUNDS; round++) {
  const a = await cpu(async () => {
    await Promise.all(Array.from({ length: N }, (_, i) => client.start(ThreeSteps, i, { id: `t-${round}-${i}` })));
    await worker.drain();
  });
  const b = await cpu(async () => {
    await Promise.all(Array.from({ length: N }, (_, i) => client.start(Sleeper, i, { id: `s-${round}-${i}` })));
    await worker.drain();
    clock.advance('1m');
    await worker.drain();
  });
  // Round 0 warms the JIT up and is not counted.
  if (round > 0) {
    threeSteps.push(a / N);
    replays.push(b / N);
  }
}
await app.close();

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
console.log(
  JSON.stringify({
    system: '@nestjs/workflows engine (in-memory store)',
    n: N,
    rounds: ROUNDS,
    three_steps_cpu_us_per_wf: Number(median(threeSteps).toFixed(1)),
    sleep_replay_cpu_us_per_wf: Number(median(replays).toFixed(1)),
  }),
);
