// Node CPU per W1 workflow of a process that only listens on the schema while another process runs
// W1 (N (1000) three-step workflows started at once, concurrency 10), for each checkout given
// (`npm run bench:listener-cpu -- <checkout> [<checkout>...]`; default: this one). Each checkout
// gets its own schema, a W1 process (bench/fixtures/w1-runner.ts) and a listening process
// (bench/fixtures/listening-process.ts, LISTENER=store or worker), both from that checkout, since
// the sender decides on which channel an end goes. The checkouts take turns, run by run, in
// LISTENER_REPS (7) rounds after a warm-up, so they see the same machine load. The listening
// process's CPU over a run, divided by N, and the notifications its connections received; prints
// the medians, and each checkout's ratio to the first, as one JSON object.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createPool } from '../test/support/postgres.js';

const N = Number(process.env.N ?? 1000);
const REPS = Number(process.env.LISTENER_REPS ?? 7);
const LISTENER = process.env.LISTENER === 'worker' ? 'worker' : 'store';
const checkouts = process.argv.slice(2).length > 0 ? process.argv.slice(2).map((dir) => resolve(dir)) : [resolve('.')];
const base = `lcpu_${Date.now().toString(36)}`;

function say(message: string): void {
  process.stderr.write(`[bench:listener-cpu ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** A fixture process of this checkout, importing the store from `checkout`; `ask(line)` writes a line and resolves with the next one it prints. */
function fixture(file: string, checkout: string, schema: string) {
  const child: ChildProcess = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', file], {
    env: { ...process.env, WF_SCHEMA: schema, WF_SRC: checkout, LISTENER },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let waiting: ((line: string) => void) | null = null;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (waiting) {
      const deliver = waiting;
      waiting = null;
      deliver(line);
    } else lines.push(line);
  });
  const next = () =>
    lines.length > 0 ? Promise.resolve(lines.shift()!) : new Promise<string>((done) => (waiting = done));
  return {
    child,
    next,
    ask: (line: string) => {
      child.stdin!.write(`${line}\n`);
      return next();
    },
  };
}

const check = createPool({ max: 1 });
const sides = checkouts.map((checkout, i) => {
  const schema = `${base}_${i}`;
  // The runner first: it creates and migrates the schema before the listener uses it.
  return {
    checkout,
    schema,
    runner: fixture('bench/fixtures/w1-runner.ts', checkout, schema),
    listener: null as ReturnType<typeof fixture> | null,
  };
});

try {
  for (const side of sides) {
    if ((await side.runner.next()) !== 'ready') throw new Error(`${side.checkout}: the W1 process did not start`);
    side.listener = fixture('bench/fixtures/listening-process.ts', side.checkout, side.schema);
    if ((await side.listener.next()) !== 'ready')
      throw new Error(`${side.checkout}: the listening process did not start`);
  }
  say(`${sides.length} checkout(s), LISTENER=${LISTENER}; warm-up`);
  for (const side of sides) await side.runner.ask(`${side.schema}-warm- 100`);
  const cpu: number[][] = sides.map(() => []);
  const received: number[][] = sides.map(() => []);
  const usage = async (side: (typeof sides)[number]) =>
    (await side.listener!.ask('cpu')).split(' ').map(Number) as [number, number];
  for (let rep = 0; rep < REPS; rep++) {
    const order = rep % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => i).reverse();
    for (const i of order) {
      const side = sides[i]!;
      const before = await usage(side);
      await side.runner.ask(`${side.schema}-r${rep}- ${N}`);
      // Notifications of the run's last commits arrive after it: give them time.
      await new Promise((done) => setTimeout(done, 200));
      const after = await usage(side);
      cpu[i]!.push((after[0] - before[0]) / 1000 / N);
      received[i]!.push(after[1] - before[1]);
    }
    say(
      `round ${rep + 1}: ${sides.map((side, i) => `${side.checkout} ${(cpu[i]!.at(-1)! * 1000).toFixed(1)} µs/wf, ${received[i]!.at(-1)} notifications`).join('; ')}`,
    );
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  const medians = cpu.map(median);
  console.log(
    JSON.stringify(
      {
        n: N,
        reps: REPS,
        listener: LISTENER,
        listening: sides.map((side, i) => ({
          checkout: side.checkout,
          node_cpu_us_per_wf: +(medians[i]! * 1000).toFixed(1),
          runs_us_per_wf: cpu[i]!.map((ms) => +(ms * 1000).toFixed(1)),
          notifications_received_per_run: received[i],
          ratio_to_first: +(medians[i]! / medians[0]!).toFixed(3),
        })),
      },
      null,
      2,
    ),
  );
} finally {
  const children = sides
    .flatMap((side) => [side.runner.child, side.listener?.child])
    .filter((child): child is ChildProcess => child !== undefined);
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map((child) => new Promise((done) => (child.exitCode !== null ? done(null) : child.once('exit', done)))),
  );
  for (const side of sides) await check.query(`DROP SCHEMA IF EXISTS "${side.schema}" CASCADE`);
  await check.end();
}
