// W1 throughput of two checkouts (or one), round by round in alternation so that both see the same
// machine load: `node bench/w1-ab.mjs <before-dir> [after-dir] [rounds]` (default 6). Each checkout
// runs bench/fixtures/w1-server.ts (its own process, pool and schema; N, CONCURRENCY from the
// environment); the order alternates every round. Prints each round's figures per side (steps/s,
// Node and PostgreSQL backend CPU ms per workflow, statements per workflow by kind), then the
// medians and the after/before ratios. Both checkouts need the fixture files. The same checkout may
// be given twice, with AFTER_ALTER (SQL, see W1_ALTER in bench/fixtures/w1-server.ts) run on the
// after side's schema only: what a constraint or an index costs. PGBENCH_SECONDS=n runs pgbench's
// 10-client one-statement transactions (bench/pgbench-update1.sql, in the `workflows_pgbench`
// database that `npm run bench:all` initializes) for n seconds before each round, and gives each
// round's steps/s as a ratio to that TPS.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { lineProcess } from './fixtures/line-process.mjs';

const args = process.argv.slice(2);
const dirs = args.filter((arg) => !/^\d+$/.test(arg));
const ROUNDS = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 6);
const N = Number(process.env.N ?? 1000);
if (dirs.length === 0) throw new Error('Usage: node bench/w1-ab.mjs <before-dir> [after-dir] [rounds]');
const names = dirs.length === 1 ? ['only'] : ['before', 'after'];
const PGBENCH_SECONDS = Number(process.env.PGBENCH_SECONDS ?? 0);

/** pgbench's 10-client one-statement TPS over PGBENCH_SECONDS (never initializes: bench:all does). */
function pgbench10() {
  const bin = `${process.env.PG_BINDIR ?? '/usr/lib/postgresql/15/bin'}/pgbench`;
  const env = {
    ...process.env,
    PGHOST: process.env.PGHOST ?? '127.0.0.1',
    PGPORT: process.env.PGPORT ?? '5432',
    PGUSER: process.env.PGUSER ?? 'postgres',
  };
  const args = [
    '-n',
    '-f',
    'bench/pgbench-update1.sql',
    '-c',
    '10',
    '-j',
    '2',
    '-T',
    String(PGBENCH_SECONDS),
    'workflows_pgbench',
  ];
  const result = spawnSync(bin, args, { cwd: dirs[dirs.length - 1], env, encoding: 'utf8' });
  const tps = Number(/tps = ([\d.]+)/.exec(result.stdout ?? '')?.[1]);
  if (!Number.isFinite(tps))
    throw new Error(
      `pgbench printed no tps (run npm run bench:all once to initialize workflows_pgbench):\n${result.stdout}${result.stderr}`,
    );
  return Math.round(tps);
}

function server(cwd, name) {
  const env = { ...process.env };
  if (name === 'after' && process.env.AFTER_ALTER) env.W1_ALTER = process.env.AFTER_ALTER;
  return lineProcess(cwd, 'bench/fixtures/w1-server.ts', {
    env,
    nodeArgs: (process.env.NODE_ARGS ?? '').split(' ').filter(Boolean),
  });
}

const sides = Object.fromEntries(names.map((name, k) => [name, server(dirs[k], name)]));
for (const side of Object.values(sides)) {
  const line = await side.next();
  if (line !== 'ready') throw new Error(`A server said ${line}`);
}
const results = Object.fromEntries(names.map((name) => [name, []]));
const per = (value) => +(value / N).toFixed(3);
for (let k = 0; k < ROUNDS; k++) {
  const tps = PGBENCH_SECONDS > 0 ? pgbench10() : null;
  for (const name of k % 2 === 0 ? names : [...names].reverse()) {
    sides[name].child.stdin.write('go\n');
    const run = JSON.parse(await sides[name].next());
    const row = {
      side: name,
      load: +loadavg()[0].toFixed(1),
      steps_per_s: Math.round((N * 3) / (run.wallMs / 1000)),
      ...(tps === null ? {} : { pgbench_10_tps: tps, x_pgbench: +((N * 3) / (run.wallMs / 1000) / tps).toFixed(3) }),
      node_cpu_ms_per_wf: per(run.nodeCpuMs),
      pg_cpu_ms_per_wf: per(run.pgCpuMs),
      statements_per_wf: Object.fromEntries(
        Object.entries(run.statements).map(([kind, s]) => [
          kind,
          `${per(s.statements)} (${(s.rows / s.statements).toFixed(1)} rows)`,
        ]),
      ),
    };
    results[name].push(row);
    console.log(JSON.stringify(row));
  }
}
for (const side of Object.values(sides)) side.child.stdin.end('quit\n');
await Promise.all(Object.values(sides).map((side) => new Promise((resolve) => side.child.once('exit', resolve))));

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const summary = {};
for (const name of names) {
  summary[name] = {
    steps_per_s: median(results[name].map((r) => r.steps_per_s)),
    ...(PGBENCH_SECONDS > 0 ? { x_pgbench: median(results[name].map((r) => r.x_pgbench)) } : {}),
    node_cpu_ms_per_wf: median(results[name].map((r) => r.node_cpu_ms_per_wf)),
    pg_cpu_ms_per_wf: median(results[name].map((r) => r.pg_cpu_ms_per_wf)),
  };
}
if (names.length === 2) {
  summary.ratio = Object.fromEntries(
    Object.keys(summary.after).map((key) => [key, +(summary.after[key] / summary.before[key]).toFixed(3)]),
  );
}
console.log(JSON.stringify(summary));
