// replayStored() over many stored instances, as a deploy pipeline runs it against new code:
// REPLAY_N (10000) instances of a four-entry workflow (two steps, a recorded value, a sleep) are
// started and run until each sleeps, then replayStored(app) replays them all against the same code
// (every one ok), REPLAY_REPS (3) times; the median time, per instance, and the store's statements
// are what it costs, beside the limit measured in the same run, interleaved: the same reads
// (list() pages and get(id, { journal }) per instance, at the same concurrency) with no replay.
// Reading only: the bench checks that nothing changed in the store.
// Run: `node --import ./scripts/register-ts.mjs bench/replay.bench.ts` (PostgreSQL at PGHOST/PGPORT,
// user postgres, database test), or with BENCH_STORE=mysql (MariaDB/MySQL, test/support/mysql.ts).
// Prints progress on stderr and one JSON object last.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Workflow, WorkflowClient, WorkflowsModule, WorkflowWorker, type WorkflowContext } from '../src/index.js';
import { WorkflowStorage } from '../src/storage/workflow-storage.js';
import { replayStored } from '../src/testing/index.js';
import { BENCH_STORE, benchStore } from './fixtures/bench-store.js';

const N = Number(process.env.REPLAY_N ?? 10_000);
const REPS = Number(process.env.REPLAY_REPS ?? 3);
const CONCURRENCY = Number(process.env.REPLAY_CONCURRENCY ?? 8);
const schema = `replay_${Date.now().toString(36)}`;

@Workflow('bench.replay')
class Checkout {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const reserved = await ctx.step('reserve', () => ({ sku: `sku-${input.n}`, qty: 1 }));
    await ctx.step('charge', () => ({ id: `ch-${input.n}`, amount: reserved.qty * 100 }));
    ctx.now();
    await ctx.sleep('cool-off', '1h');
    await ctx.step('ship', () => true);
  }
}

const { store, end } = benchStore(schema, 8);

@Module({
  imports: [WorkflowsModule.forRoot({ store, worker: { enabled: false, concurrency: 20 } })],
  providers: [Checkout],
})
class BenchModule {}

const log = (line: string) => process.stderr.write(`${line}\n`);
const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error'] });
try {
  await app.init();
  const client = app.get(WorkflowClient);
  const worker = app.get(WorkflowWorker);
  const fillStart = performance.now();
  for (let from = 0; from < N; from += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, N - from) }, (_, i) =>
        client.start(Checkout, { n: from + i }, { id: `replay-${String(from + i).padStart(6, '0')}` }),
      ),
    );
    await worker.drain();
  }
  const suspended = await client.list({ status: 'suspended', limit: 1 });
  log(`filled ${N} suspended instances in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);
  if (suspended.length === 0) throw new Error('no instance suspended');

  const before = JSON.stringify(await client.getStatus('replay-000000', { journal: true }));
  const storage = app.get(WorkflowStorage);
  /** The limit: what replayStored() reads, read the same way, with nothing replayed. */
  async function readAll(): Promise<number> {
    let read = 0;
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = await storage.list({ status: ['suspended'], limit: 500, offset: 0, ...(after ? { after } : {}) });
      let next = 0;
      const lane = async () => {
        for (let i = next++; i < page.length; i = next++) if (await storage.get(page[i]!.id, { journal: true })) read++;
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
      if (page.length < 500) return read;
      after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
    }
  }
  const times: number[] = [];
  const reads: number[] = [];
  const cpu = { replay: [] as number[], reads: [] as number[] };
  /** This process's CPU (user + system), in ms: on a shared machine a steadier figure than the wall time. */
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  for (let rep = 0; rep < REPS; rep++) {
    const readStart = performance.now();
    const readCpu = cpuMs();
    if ((await readAll()) !== N) throw new Error('the read-only pass missed instances');
    reads.push(performance.now() - readStart);
    cpu.reads.push(cpuMs() - readCpu);
    const start = performance.now();
    const replayCpu = cpuMs();
    const reports = await replayStored(app, { concurrency: CONCURRENCY });
    const ms = performance.now() - start;
    cpu.replay.push(cpuMs() - replayCpu);
    const ok = reports.filter((report) => report.result === 'ok').length;
    if (reports.length !== N || ok !== N) throw new Error(`replayed ${reports.length}, ${ok} ok; expected ${N}`);
    times.push(ms);
    log(`rep ${rep + 1}: ${N} instances in ${ms.toFixed(0)} ms (the reads alone: ${reads.at(-1)!.toFixed(0)} ms)`);
  }
  if (JSON.stringify(await client.getStatus('replay-000000', { journal: true })) !== before)
    throw new Error('the replay changed the store');
  const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const median = middle(times);
  console.log(
    JSON.stringify({
      store: BENCH_STORE,
      instances: N,
      concurrency: CONCURRENCY,
      medianMs: Math.round(median),
      perInstanceMs: Number((median / N).toFixed(3)),
      instancesPerSecond: Math.round(N / (median / 1000)),
      timesMs: times.map(Math.round),
      readsOnlyMedianMs: Math.round(middle(reads)),
      replayOverReads: Number((median / middle(reads)).toFixed(2)),
      readsOnlyMs: reads.map(Math.round),
      cpuMsPerInstance: Number((middle(cpu.replay) / N).toFixed(3)),
      readsOnlyCpuMsPerInstance: Number((middle(cpu.reads) / N).toFixed(3)),
      load: (await import('node:os')).loadavg().map((value) => Number(value.toFixed(1))),
    }),
  );
} finally {
  await app.close();
  await end({ drop: true });
}
