// The in-memory drain() and the engine's CPU of two checkouts, round by round in alternation so that
// both see the same machine load: `node bench/drain-ab.mjs <before-dir> <after-dir> [rounds]`
// (default 6). Each round runs, in each checkout and as fresh processes, `npm run bench:drain`
// (three drains of N=10000 in one process: the first in a fresh process, the last beside 20,000
// finished instances) and `npm run bench:engine`; the order of the checkouts alternates every round.
// Prints each run's CPU µs per instance (per workflow for the engine) with the load average, then
// the medians and the after/before ratios of the medians.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

const args = process.argv.slice(2);
const dirs = args.filter((arg) => !/^\d+$/.test(arg));
const ROUNDS = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 6);
if (dirs.length !== 2) throw new Error('Usage: node bench/drain-ab.mjs <before-dir> <after-dir> [rounds]');
const names = ['before', 'after'];

/** The JSON line a bench prints last. */
function run(cwd, script) {
  const result = spawnSync('npm', ['run', '--silent', script], { cwd, encoding: 'utf8', env: process.env });
  const line = (result.stdout ?? '').trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`${script} in ${cwd} printed no result:\n${result.stdout}${result.stderr}`);
  }
}

const results = { before: [], after: [] };
for (let k = 0; k < ROUNDS; k++) {
  for (const name of k % 2 === 0 ? names : [...names].reverse()) {
    const cwd = dirs[names.indexOf(name)];
    const load = +loadavg()[0].toFixed(1);
    const drain = run(cwd, 'bench:drain');
    const engine = run(cwd, 'bench:engine');
    const perInstance = (d) => +((d.drain_cpu_ms * 1000) / drain.n).toFixed(1);
    const row = {
      round: k + 1,
      side: name,
      load,
      first_drain_us: perInstance(drain.drains[0]),
      second_drain_us: perInstance(drain.drains[1]),
      last_drain_us: perInstance(drain.drains.at(-1)),
      engine_three_steps_us: engine.three_steps_cpu_us_per_wf,
      engine_sleep_replay_us: engine.sleep_replay_cpu_us_per_wf,
    };
    results[name].push(row);
    console.log(JSON.stringify(row));
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : +((sorted[middle - 1] + sorted[middle]) / 2).toFixed(1);
};
const keys = ['first_drain_us', 'second_drain_us', 'last_drain_us', 'engine_three_steps_us', 'engine_sleep_replay_us'];
const summary = {};
for (const name of names)
  summary[name] = Object.fromEntries(keys.map((key) => [key, median(results[name].map((row) => row[key]))]));
summary.ratio = Object.fromEntries(keys.map((key) => [key, +(summary.after[key] / summary.before[key]).toFixed(2)]));
console.log(JSON.stringify({ medians: summary }));
