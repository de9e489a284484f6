// How on time an every-second schedule is on PostgreSQL with the module's defaults (poll 1 s, lease
// 30 s), served by two processes: for each occurrence, how late its instance was created and how
// late its first step ran, and whether any second was missed or started twice. Then the process
// holding the schedule's lease is killed, and the gap until the other one takes over is measured.
// Run: `npm run bench:schedules` (DURATION=30 seconds before the kill, 45 after, by default).
import { spawn, type ChildProcess } from 'node:child_process';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { createPool } from '../test/support/postgres.js';

const BEFORE = Number(process.env.DURATION ?? 30) * 1000;
const AFTER = 45_000;
const schema = `bench_sched_${Date.now().toString(36)}`;
const pool = createPool({ max: 2 });
const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
await store.init();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function start(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', './scripts/register-ts.mjs', 'bench/fixtures/schedule-process.ts'],
    {
      env: { ...process.env, WF_SCHEMA: schema },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`a schedule process exited with ${code}`)));
    child.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve(child));
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const describe = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50)} ms, p95 ${percentile(sorted, 95)} ms, max ${sorted.at(-1)} ms (n=${sorted.length})`;
};

const children = await Promise.all([start(), start()]);
try {
  await sleep(BEFORE);
  const owner = (await store.getSchedule('tick'))?.leaseOwner;
  const doomed = children.find((child) => owner === `bench-${child.pid}`)!;
  const survivor = children.find((child) => child !== doomed)!;
  doomed.kill('SIGKILL');
  const killedAt = Date.now();
  await sleep(AFTER);
  survivor.kill('SIGTERM');
  await new Promise((resolve) => survivor.once('exit', resolve));

  const runs = await store.list({ scheduleId: 'tick', limit: 1000, offset: 0 });
  const times = runs.map((r) => r.scheduledAt!).sort((a, b) => a - b);
  let gaps = 0;
  for (let i = 1; i < times.length; i++) if (times[i]! - times[i - 1]! !== 1000) gaps++;
  const steady = runs.filter((r) => r.scheduledAt! < killedAt);
  const created = steady.map((r) => r.createdAt - r.scheduledAt!);
  const ran: number[] = [];
  for (const run of steady) {
    const details = await store.get(run.id, { journal: true });
    const entry = details?.journal?.find((e) => e.name === 'ran');
    if (entry?.state === 'completed') ran.push((entry.value as number) - run.scheduledAt!);
  }
  const firstAfter = runs.filter((r) => r.scheduledAt! > killedAt).sort((a, b) => a.createdAt - b.createdAt)[0];
  console.log(
    `every-second schedule, two processes, defaults (poll 1 s, lease 30 s), ${BEFORE / 1000} s then a kill and ${AFTER / 1000} s`,
  );
  console.log(
    `occurrences: ${runs.length} instances, ${new Set(runs.map((r) => r.id)).size} distinct, ${gaps} gaps between consecutive seconds`,
  );
  console.log(`created after the occurrence (before the kill): ${describe(created)}`);
  console.log(`first step ran after the occurrence (before the kill): ${describe(ran)}`);
  console.log(
    `takeover: the first instance the survivor created after the kill came ${firstAfter ? firstAfter.createdAt - killedAt : 'never'} ms after it`,
  );
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await store.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
