// Streams on PostgreSQL and MariaDB: N values (default 1,000) appended one at a time, as a step
// writes them (each append awaited), and followed live by client.readStream()'s reader through a
// store of its own (another pool; on PostgreSQL its own LISTEN connection, so each value reaches it
// by NOTIFY through the server; on MariaDB by its poll). Reports write-to-reader latency p50/p95
// and writes/s, with 1 reader and with READERS (default 100) readers of the one stream.
// Run: `npm run bench:streams` (PostgreSQL at PGHOST/PGPORT user postgres db test; MariaDB at
// 127.0.0.1:3306 root db test). KINDS=postgres or KINDS=mysql narrows it.
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { WorkflowStreamReader } from '../src/client/stream-reader.js';
import { WorkflowStorage } from '../src/storage/workflow-storage.js';
import { freshSchema, openSqlTarget, SERVER, type SqlKind } from '../test/support/sql-target.js';

const N = Number(process.env.N ?? 1000);
const READERS = Number(process.env.READERS ?? 100);
const KINDS = (process.env.KINDS ?? 'postgres,mysql').split(',') as SqlKind[];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(kind: SqlKind, readers: number): Promise<string> {
  const schema = freshSchema(kind, 'bench_streams');
  const writer = openSqlTarget(kind, schema, 4);
  const reading = openSqlTarget(kind, schema, 10);
  await writer.store.init();
  const id = `bench-${readers}`;
  await writer.store.create({
    id,
    workflow: 'bench.streams',
    version: 1,
    input: null,
    deadline: null,
    now: Date.now(),
  });
  const storage = new WorkflowStorage(reading.store);
  const writes = new WorkflowStorage(writer.store);
  const latencies: number[] = [];
  const done = Array.from({ length: readers }, async () => {
    const reader = new WorkflowStreamReader<{ i: number; at: number }>(storage, id, 'out', { after: 0 });
    for await (const item of reader) if (!item.discarded) latencies.push(performance.now() - item.value.at);
  });
  // Let every reader subscribe and find the stream empty before the first write.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const start = performance.now();
  for (let i = 0; i < N; i++) {
    await writes.streams.append({
      id,
      stream: 'out',
      items: [{ kind: 'value', value: { i, at: performance.now() }, bodyIndex: null, step: 'bench', attempt: 1 }],
      close: i === N - 1,
      now: Date.now(),
    });
  }
  const writeSeconds = (performance.now() - start) / 1000;
  await Promise.all(done);
  const all = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  if (latencies.length !== N * readers) throw new Error(`read ${latencies.length} values, expected ${N * readers}`);
  await reading.close();
  await writer.close({ drop: true });
  return (
    `| ${SERVER[kind]} | ${readers} | ${N} | ${(N / writeSeconds).toFixed(0)} | ${percentile(latencies, 50).toFixed(1)} | ` +
    `${percentile(latencies, 95).toFixed(1)} | ${all.toFixed(2)} |`
  );
}

console.log('| store | readers | values | writes/s | latency p50 (ms) | latency p95 (ms) | all read (s) |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const kind of KINDS) {
  for (const readers of [1, READERS]) console.log(await run(kind, readers));
}
