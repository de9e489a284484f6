// One bench script run in two checkouts, round by round in alternation so that both see the same
// machine load: `node bench/checkout-ab.mjs <before-dir> <after-dir> [script] [rounds]` (script
// `bench`, rounds 3 by default; the order of the two sides alternates every round). Each run is
// `npm run <script>` in its checkout; its last line must be one JSON object (every bench here ends
// so). Prints each run's numeric figures, then the medians per side and the after/before ratio of
// each median. Give the same checkout twice to measure the noise between two runs of one commit.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';

const [beforeDir, afterDir, script = 'bench', roundsArg = '3'] = process.argv.slice(2);
if (!beforeDir || !afterDir)
  throw new Error('Usage: node bench/checkout-ab.mjs <before-dir> <after-dir> [script] [rounds]');
const rounds = Number(roundsArg);
const sides = [
  { name: 'before', dir: resolve(beforeDir), runs: [] },
  { name: 'after', dir: resolve(afterDir), runs: [] },
];

/** The numeric fields of the bench's closing JSON line. */
function runOnce(side) {
  const result = spawnSync('npm', ['run', '--silent', script], { cwd: side.dir, encoding: 'utf8', env: process.env });
  const last = (result.stdout ?? '').trim().split('\n').pop() ?? '';
  let parsed;
  try {
    parsed = JSON.parse(last);
  } catch {
    throw new Error(`npm run ${script} in ${side.dir} ended without a JSON line:\n${result.stdout}\n${result.stderr}`);
  }
  return Object.fromEntries(Object.entries(parsed).filter(([, value]) => typeof value === 'number'));
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

for (let round = 0; round < rounds; round++) {
  for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
    const load = +loadavg()[0].toFixed(1);
    const figures = runOnce(side);
    side.runs.push(figures);
    console.log(JSON.stringify({ round: round + 1, side: side.name, load, ...figures }));
  }
}

const keys = Object.keys(sides[0].runs[0]).filter((key) => sides.every((side) => side.runs.every((r) => key in r)));
const summary = {};
for (const key of keys) {
  const [before, after] = sides.map((side) => median(side.runs.map((r) => r[key])));
  summary[key] = { before, after, ratio: before === 0 ? null : +(after / before).toFixed(3) };
}
console.table(summary);
console.log(JSON.stringify({ script, rounds, before: sides[0].dir, after: sides[1].dir, medians: summary }));
