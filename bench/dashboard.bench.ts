// The dashboard's list page on 100,000 instances in PostgreSQL: HTTP round trips to a real Nest app
// (Express) serving WorkflowsDashboardModule, through WorkflowClient and the store, with the
// filters an operator uses and deep keyset pages. Run: `npm run bench:dashboard`
// (PostgreSQL at PGHOST/PGPORT, user postgres, database test; INSTANCES and REPS to change the size).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkflowsDashboardModule } from '../src/dashboard/index.js';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../src/postgres/index.js';
import { createPool } from '../test/support/postgres.js';

const INSTANCES = Number(process.env.INSTANCES ?? 100_000);
const REPS = Number(process.env.REPS ?? 100);
const WARMUP = 10;
const schema = `bench_dash_${Date.now().toString(36)}`;
const pool = createPool({ max: 4 });
const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
await store.init();

// 100,000 instances over 30 days, 10 workflows: 70% completed, 10% failed, 0.2% compensation_failed,
// 9.8% suspended, 5% pending, 5% running; every 10th a child of another; some from a schedule.
const start = Date.UTC(2026, 0, 1);
const loadStarted = Date.now();
await pool.query(
  `INSERT INTO "${schema}".instances (id, workflow, version, status, input, output, error, parent_id, schedule_id, wake_at, signal_cursor, runs, created_at, updated_at)
   SELECT 'order-' || lpad(n::text, 7, '0'),
          'orders.flow-' || (n % 10),
          1 + (n % 3 = 0)::int,
          s.status,
          json_build_object('order', n, 'customer', 'c-' || (n % 997), 'lines', json_build_array(json_build_object('sku', 'sku-' || (n % 50), 'qty', 1 + n % 4))),
          CASE WHEN s.status = 'completed' THEN json_build_object('charged', n % 500) END,
          CASE WHEN s.status IN ('failed', 'compensation_failed') THEN json_build_object('name', 'PaymentError', 'message', 'card declined') END,
          CASE WHEN n % 10 = 0 AND n > 10 THEN 'order-' || lpad((n - 7)::text, 7, '0') END,
          CASE WHEN n % 50 = 1 THEN 'nightly-report' END,
          CASE WHEN s.status IN ('pending', 'suspended') THEN $2::bigint + n::bigint * 26000 + 3600000 END,
          0, 1, $2::bigint + n::bigint * 26000, $2::bigint + n::bigint * 26000 + 5000
   FROM generate_series(1, $1::int) AS n,
   LATERAL (SELECT CASE
     WHEN n % 500 = 7 THEN 'compensation_failed'
     WHEN n % 100 < 70 THEN 'completed'
     WHEN n % 100 < 80 THEN 'failed'
     WHEN n % 100 < 90 THEN 'suspended'
     WHEN n % 100 < 95 THEN 'pending'
     ELSE 'running' END AS status) AS s`,
  [INSTANCES, start],
);
await pool.query(`VACUUM ANALYZE "${schema}".instances`);
console.log(`loaded ${INSTANCES} instances in ${Date.now() - loadStarted} ms`);

@Module({
  imports: [
    WorkflowsModule.forRoot({ store, worker: false }),
    WorkflowsDashboardModule.forRoot({ path: '/workflows' }),
  ],
})
class BenchApp {}
const app = await NestFactory.create(BenchApp, { logger: false });
await app.listen(0, '127.0.0.1');
const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/workflows`;
const client = app.get(WorkflowClient);

// A position in the middle of the table, as the "Older →" link after 1,000 pages carries it.
const [middle] = await client.list({ order: 'desc', offset: Math.floor(INSTANCES / 2), limit: 1 });
const after = encodeURIComponent(`${middle!.createdAt}.${middle!.id}`);
const from = new Date(start + 10 * 86_400_000).toISOString().slice(0, 16);
const to = new Date(start + 11 * 86_400_000).toISOString().slice(0, 16);

const cases: Array<[string, string]> = [
  ['newest page, no filter', ''],
  ['status=failed (10%)', '?status=failed'],
  ['status=compensation_failed (0.2%)', '?status=compensation_failed'],
  ['status=failed + status=cancelled (10% + 0)', '?status=failed&status=cancelled'],
  ['workflow=orders.flow-3 (10%)', '?workflow=orders.flow-3'],
  ['workflow + version + status', '?workflow=orders.flow-3&version=2&status=completed'],
  ['schedule=nightly-report (2%)', '?schedule=nightly-report'],
  ['parent=order-0000493 (1 child)', '?parent=order-0000493'],
  ['id prefix order-00500', '?id=order-00500'],
  ['created in one day (3,300)', `?from=${from}&to=${to}`],
  ['page 1,000 (keyset, after 50,000)', `?after=${after}`],
  ['page 1,000 with status=failed', `?status=failed&after=${after}`],
];

async function time(fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i += 1) await fn();
  const samples: number[] = [];
  for (let i = 0; i < REPS; i += 1) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  return samples.sort((a, b) => a - b);
}
const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]!.toFixed(1);

console.log(
  `\n| list page (${INSTANCES.toLocaleString('en')} instances, 50 per page) | rows | p50 ms | p95 ms | max ms |`,
);
console.log('|---|---|---|---|---|');
for (const [name, query] of cases) {
  let rows = 0;
  const samples = await time(async () => {
    const response = await fetch(`${url}${query}`);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status}`);
    rows = (text.match(/<tr>\n<td class="id">/g) ?? []).length;
  });
  console.log(
    `| ${name} | ${rows} | ${pct(samples, 50)} | ${pct(samples, 95)} | ${pct(samples, 100).replace(/^/, '')} |`,
  );
}

// For contrast: the same deep page by offset, as list({ offset }) reads it.
const offsetSamples = await time(() => client.list({ order: 'desc', offset: Math.floor(INSTANCES / 2), limit: 51 }));
console.log(
  `| (contrast) client.list offset ${Math.floor(INSTANCES / 2).toLocaleString('en')}, no HTTP | 51 | ${pct(offsetSamples, 50)} | ${pct(offsetSamples, 95)} | ${pct(offsetSamples, 100)} |`,
);

await app.close();
await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
await pool.end();
