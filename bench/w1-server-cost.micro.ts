// The PostgreSQL backend's CPU per statement of W1's path, one kind at a time, on one connection:
// `node --import ./scripts/register-ts.mjs bench/w1-server-cost.micro.ts` (GROUPS, default 200).
// It creates GROUPS x 10 instances, then per group: a claim of 10, two batches of 10 step writes,
// and a batch of 10 last-step-and-complete writes, as W1's worker sends them (the store's own
// statements), adding the backend's CPU (/proc/<pid>/stat, 10 ms ticks: summed over many statements)
// before and after each to that kind's total. Prints CPU ms per statement and per workflow by kind.
import { readFileSync } from 'node:fs';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { createPool } from '../test/support/postgres.js';

const GROUPS = Number(process.env.GROUPS ?? 200);
const schema = `bench_cost_${Date.now().toString(36)}_${process.pid}`;
const pool = createPool({ max: 1, ...(process.env.PG_OPTIONS ? { options: process.env.PG_OPTIONS } : {}) });
const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
await store.init();
const pid = (await pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
const cpu = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
const totals: Record<string, { ms: number; n: number }> = {};
async function timed<T>(kind: string, fn: () => Promise<T>): Promise<T> {
  const before = cpu();
  const result = await fn();
  const entry = (totals[kind] ??= { ms: 0, n: 0 });
  entry.ms += cpu() - before;
  entry.n++;
  return result;
}

const now = Date.now();
const workflows = [{ name: 'bench.three-steps', version: 1 }];
const entry = (name: string, i: number, step: number) => ({
  name,
  kind: 'step' as const,
  state: 'completed' as const,
  value: { i, step },
  attempts: 1,
  createdAt: now,
  updatedAt: now,
});
for (let g = 0; g < GROUPS; g++) {
  await timed('create 10 (one batch)', () =>
    Promise.all(
      Array.from({ length: 10 }, (_, k) =>
        store.create({
          id: `c${g}-${k}`,
          workflow: 'bench.three-steps',
          version: 1,
          input: g * 10 + k,
          wakeAt: now,
          now,
        } as never),
      ),
    ),
  );
}
for (let g = 0; g < GROUPS; g++) {
  const token = `t${g}`;
  const { instances } = await timed('claim 10', () =>
    store.claim({
      owner: 'cost',
      token,
      leaseUntil: now + 60_000,
      now,
      limit: 10,
      workflows,
      limits: [],
      rateLimits: [],
    } as never),
  );
  if (instances.length !== 10) throw new Error(`claimed ${instances.length}`);
  for (const step of [1, 2]) {
    await timed('write batch of 10 steps', () =>
      Promise.all(
        instances.map((instance, k) =>
          store.write(instance.id, token, { now, entries: [entry(`step-${step}`, k, step)] }),
        ),
      ),
    );
  }
  await timed('write batch of 10 last steps + completed', () =>
    Promise.all(
      instances.map((instance, k) =>
        store.write(instance.id, token, {
          now,
          entries: [entry('step-3', k, 3)],
          status: 'completed',
          output: [1, 2, 3].map((step) => ({ i: k, step })),
          release: { wakeAt: null, waits: [], signalCursor: 0 },
        }),
      ),
    ),
  );
}
const done = (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".instances WHERE status = 'completed'`))
  .rows[0].n;
const perWorkflow = Object.fromEntries(
  Object.entries(totals).map(([kind, { ms, n }]) => [
    kind,
    {
      ms_per_statement: +(ms / n).toFixed(3),
      ms_per_workflow: +(((ms / n) * (kind.startsWith('write batch of 10 steps') ? 2 : 1)) / 10).toFixed(3),
    },
  ]),
);
console.log(JSON.stringify({ groups: GROUPS, completed: done, ...perWorkflow }, null, 1));
await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
await pool.end();
