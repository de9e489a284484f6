// What the end notification (pg_notify 'ended:<id>' in the write that ends an instance) costs: the
// same single-row UPDATE ... RETURNING in autocommit, without and with the notification, in
// alternating blocks on one connection while another connection LISTENs (as a worker's does).
// Run: node bench/end-notify.micro.mjs   (PostgreSQL from PGHOST/PGPORT/PGUSER/PGDATABASE, default
// 127.0.0.1:5432 postgres/test). Prints per-statement means and their ratio.
import pg from 'pg';

const config = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  database: process.env.PGDATABASE ?? 'test',
};
const schema = `bench_notify_${process.pid}`;
const ROWS = 400;
const ROUNDS = 6;
const channel = `${schema}_wake`;

const writer = new pg.Client(config);
const listener = new pg.Client(config);
await writer.connect();
await listener.connect();
let heard = 0;
listener.on('notification', () => heard++);
await listener.query(`LISTEN "${channel}"`);
await writer.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".t (id text PRIMARY KEY, status text NOT NULL)`);

const plain = {
  name: 'plain',
  text: `WITH target AS (UPDATE "${schema}".t SET status = $2 WHERE id = $1 RETURNING id, status) SELECT id, NULL AS ended FROM target`,
};
const notifying = {
  name: 'notifying',
  text: `WITH target AS (UPDATE "${schema}".t SET status = $2 WHERE id = $1 RETURNING id, status)
SELECT id, CASE WHEN status IN ('completed', 'failed') THEN (SELECT true FROM pg_notify($3, 'ended:' || id)) END AS ended FROM target`,
};

async function block(kind) {
  await writer.query(`TRUNCATE "${schema}".t`);
  await writer.query(`INSERT INTO "${schema}".t SELECT 'i' || g, 'running' FROM generate_series(1, ${ROWS}) g`);
  const started = process.hrtime.bigint();
  for (let i = 1; i <= ROWS; i++) {
    if (kind === 'plain') await writer.query({ ...plain, values: [`i${i}`, 'completed'] });
    else await writer.query({ ...notifying, values: [`i${i}`, 'completed', channel] });
  }
  return Number(process.hrtime.bigint() - started) / 1e6 / ROWS;
}

const times = { plain: [], notifying: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of round % 2 === 0 ? ['plain', 'notifying'] : ['notifying', 'plain'])
    times[kind].push(await block(kind));
}
await new Promise((resolve) => setTimeout(resolve, 200));
await writer.query(`DROP SCHEMA "${schema}" CASCADE`);
await writer.end();
await listener.end();

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const p = median(times.plain);
const n = median(times.notifying);
console.log(
  JSON.stringify({
    rows_per_block: ROWS,
    rounds: ROUNDS,
    plain_ms: +p.toFixed(3),
    notifying_ms: +n.toFixed(3),
    ratio: +(n / p).toFixed(2),
    notifications_heard: heard,
  }),
);
