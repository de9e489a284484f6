// Cross-process start-to-running latency of two checkouts, interleaved start by start so that both
// see the same machine load: `node bench/latency-ab.mjs <before-dir> <after-dir> [reps]` (default
// 100; FILL=n puts n instances in each table first, see bench/fixtures/latency-starter.ts). Each
// checkout runs its own starter and worker processes on its own schema; the order alternates every
// round, with 37-237 ms between starts as in bench/cross-process.bench.ts. With AB=w2 it times W2
// instead (bench/fixtures/w2-server.ts: one 3-step workflow started and awaited, 5 ms apart).
// Both checkouts need the fixture files. Prints one JSON line.
import { loadavg } from 'node:os';
import { lineProcess } from './fixtures/line-process.mjs';

const [before, after] = process.argv.slice(2, 4);
const REPS = Number(process.argv[4] ?? 100);
if (!before || !after) throw new Error('Usage: node bench/latency-ab.mjs <before-dir> <after-dir> [reps]');

const W2 = process.env.AB === 'w2';
const server = W2 ? 'bench/fixtures/w2-server.ts' : 'bench/fixtures/latency-starter.ts';
const gap = () => (W2 ? 5 : 37 + Math.random() * 200);

const starter = (cwd) => lineProcess(cwd, server);

const sides = { before: starter(before), after: starter(after) };
for (const side of Object.values(sides)) {
  const line = await side.next();
  if (line !== 'ready') throw new Error(`A starter said ${line}`);
}
const latencies = { before: [], after: [] };
const loads = [];
for (let k = -3; k < REPS; k++) {
  for (const name of k % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
    await new Promise((resolve) => setTimeout(resolve, gap()));
    sides[name].child.stdin.write('go\n');
    const ms = Number(await sides[name].next());
    if (k >= 0) latencies[name].push(ms);
  }
  loads.push(loadavg()[0]);
}
for (const side of Object.values(sides)) side.child.stdin.end('quit\n');
await Promise.all(Object.values(sides).map((side) => new Promise((resolve) => side.child.once('exit', resolve))));

const at = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))].toFixed(2);
};
console.log(
  JSON.stringify({
    bench: W2 ? 'W2' : 'cross-process start-to-running',
    reps: REPS,
    fill: Number(process.env.FILL ?? 0),
    load: { min: +Math.min(...loads).toFixed(1), median: at(loads, 50), max: +Math.max(...loads).toFixed(1) },
    before: {
      p50_ms: at(latencies.before, 50),
      p95_ms: at(latencies.before, 95),
      p99_ms: at(latencies.before, 99),
      max_ms: at(latencies.before, 100),
    },
    after: {
      p50_ms: at(latencies.after, 50),
      p95_ms: at(latencies.after, 95),
      p99_ms: at(latencies.after, 99),
      max_ms: at(latencies.after, 100),
    },
  }),
);
