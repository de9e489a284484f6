// W1 run by several processes at once on one schema, for two checkouts in alternation:
// `node bench/w1-parallel-ab.mjs <before-dir> <after-dir> [rounds]` (default 6; PROCS processes per
// checkout, default 3; N workflows each, default 1000). Each checkout gets its own schema, shared by
// its PROCS bench/fixtures/w1-server.ts processes (W1_SCHEMA: each starts its N at once and its
// worker, concurrency 10, runs whatever is due, its own or another's); a round sends "go" to a
// checkout's processes together and lasts until each sees its N completed. Sides alternate round by
// round. Per round: steps/s over all processes (the slowest one's wall time), Node and PostgreSQL
// backend CPU ms per workflow, the notifications a LISTEN on the schema's ends' channel received
// (every end that notified), and, sampled every 5 ms from pg_stat_activity, how many of the
// processes' backends were waiting for PostgreSQL's notification lock (a heavyweight lock on an
// object: wait_event 'object') or for anything, on average. Prints each round, then the medians and
// the after/before ratios. Both checkouts need the fixture files.
import { loadavg } from 'node:os';
import pg from 'pg';
import { lineProcess } from './fixtures/line-process.mjs';

const args = process.argv.slice(2);
const dirs = args.filter((arg) => !/^\d+$/.test(arg));
const ROUNDS = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 6);
const PROCS = Number(process.env.PROCS ?? 3);
const N = Number(process.env.N ?? 1000);
if (dirs.length !== 2) throw new Error('Usage: node bench/w1-parallel-ab.mjs <before-dir> <after-dir> [rounds]');
const names = ['before', 'after'];
const connection = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  database: process.env.PGDATABASE ?? 'test',
};
const check = new pg.Client(connection);
await check.connect();
const stamp = Date.now().toString(36);

const sides = {};
for (const [k, name] of names.entries()) {
  const schema = `bench_w1par_${stamp}_${name}`;
  // Started one after another: the first migrates the schema, the others find it current.
  const processes = [];
  for (let p = 0; p < PROCS; p++) {
    const child = lineProcess(dirs[k], 'bench/fixtures/w1-server.ts', { env: { ...process.env, W1_SCHEMA: schema } });
    const line = await child.next();
    if (line !== 'ready') throw new Error(`A W1 process said ${line}`);
    processes.push(child);
  }
  const listener = new pg.Client(connection);
  await listener.connect();
  const side = { schema, processes, listener, heard: 0 };
  listener.on('notification', () => side.heard++);
  await listener.query(`LISTEN "${schema}_wake_ended"`);
  sides[name] = side;
}

/** Samples the W1 processes' backends every 5 ms until `stop()`: mean backends waiting for the notification lock, and for anything. */
function sampleWaits() {
  let samples = 0;
  let notifyLock = 0;
  let waiting = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await check.query(
        `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event = 'object')::int AS notify_lock,
                count(*) FILTER (WHERE wait_event IS NOT NULL AND state = 'active')::int AS waiting
         FROM pg_stat_activity WHERE application_name LIKE 'w1ab-%'`,
      );
      samples++;
      notifyLock += rows[0].notify_lock;
      waiting += rows[0].waiting;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return { notifyLock: +(notifyLock / samples).toFixed(2), waiting: +(waiting / samples).toFixed(2), samples };
  };
}

const results = { before: [], after: [] };
const per = (value) => +(value / (N * PROCS)).toFixed(3);
for (let k = 0; k < ROUNDS; k++) {
  for (const name of k % 2 === 0 ? names : [...names].reverse()) {
    const side = sides[name];
    side.heard = 0;
    const stop = sampleWaits();
    for (const child of side.processes) child.child.stdin.write('go\n');
    const runs = await Promise.all(side.processes.map(async (child) => JSON.parse(await child.next())));
    const waits = await stop();
    // Notifications of the round's last commits may still be on their way.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const wallMs = Math.max(...runs.map((run) => run.wallMs));
    const row = {
      side: name,
      load: +loadavg()[0].toFixed(1),
      steps_per_s: Math.round((N * PROCS * 3) / (wallMs / 1000)),
      node_cpu_ms_per_wf: per(runs.reduce((sum, run) => sum + run.nodeCpuMs, 0)),
      pg_cpu_ms_per_wf: per(runs.reduce((sum, run) => sum + run.pgCpuMs, 0)),
      ends_notified: side.heard,
      backends_waiting_notify_lock: waits.notifyLock,
      backends_waiting_any: waits.waiting,
    };
    results[name].push(row);
    console.log(JSON.stringify(row));
  }
}
for (const side of Object.values(sides)) {
  for (const child of side.processes) child.child.stdin.end('quit\n');
  await Promise.all(side.processes.map((child) => new Promise((resolve) => child.child.once('exit', resolve))));
  await side.listener.end();
  await check.query(`DROP SCHEMA IF EXISTS "${side.schema}" CASCADE`);
}
await check.end();

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const summary = { procs: PROCS, n_per_proc: N, rounds: ROUNDS };
const keys = [
  'steps_per_s',
  'node_cpu_ms_per_wf',
  'pg_cpu_ms_per_wf',
  'ends_notified',
  'backends_waiting_notify_lock',
  'backends_waiting_any',
];
for (const name of names)
  summary[name] = Object.fromEntries(keys.map((key) => [key, median(results[name].map((r) => r[key]))]));
summary.ratio = Object.fromEntries(
  keys
    .filter((key) => summary.before[key] !== 0)
    .map((key) => [key, +(summary.after[key] / summary.before[key]).toFixed(3)]),
);
console.log(JSON.stringify(summary));
