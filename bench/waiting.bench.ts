// W5, a million waiting: the costs that could grow with the fleet of unfinished instances, on a
// schema holding `--waiting` unfinished instances (half asleep until some time next month, half
// waiting for a signal with a key of their own) and `--finished` finished ones, beside the same on
// an empty schema in the same run (each measure run on both, the empty one first).
// The fleet is inserted with SQL as the store would have written it: each row a copy of a real
// instance of that kind (every column, its journal entries, on MySQL its `waits` rows), made by
// the app in that schema, under a new id, with its key, its wake-up time (spread over the month)
// and its times rewritten; then VACUUM ANALYZE / ANALYZE TABLE, as autovacuum would have done.
// Measured on each schema:
//   - W1 (bench/fixtures/w1.ts) steps/s, median of REPS runs after a warm-up, with Node's CPU and
//     the database server's CPU per workflow (PostgreSQL: the pool's backends, by application_name;
//     MariaDB: the threads serving the pool's connections; both read from /proc), and W2 (one
//     workflow at a time, W2_N of them) latency p50 and server CPU per workflow;
//   - one claim (store.claim() on a pool of one connection, the worker's workflows, limit 10) with
//     nothing due and with 10 due (put back after each claim), p50/p95 client side beside a
//     `SELECT 1` round trip, and the rows it read (PostgreSQL: pg_stat_xact_user_tables in a
//     rolled-back transaction around the claim statement; MariaDB: the session's Handler_read_* and the
//     index entries its index condition pushdown rejected);
//     the claim statement's plan (EXPLAIN ANALYZE) in both cases;
//   - a signal to one waiting instance until its next step runs, SIGNALS of them one by one, p50/p95;
//   - one signal waking WAKE instances (copies, waiting on one key) until all ran their three steps
//     after the wait: steps/s against W1's;
//   - client.purge() of the finished instances: its time, and W1's steps/s while it runs; on MySQL
//     the `<schema>_locks` rows before and after;
//   - the dashboard's list page (HTTP) and client.list({ status: 'suspended' })'s first page, p50;
//   - bytes per instance on disk (tables and indexes), and this process's RSS after the schema's run.
//   - PostgreSQL: the notifications a process LISTENing on the schema's channels hears per W1 workflow.
// Run: `npm run bench:scale -- --store postgres|mysql --waiting N --finished N` (defaults a million
// each; N, REPS, W2_N, SIGNALS, WAKE, CLAIMS, CONCURRENCY to change the rest). Prints progress and
// plans on stderr, a table, and one JSON object as its last line: the figures of both schemas, and the
// ratios (filled / empty) w1_ratio, claim_p50_ratio (nothing due), claim_due_p50_ratio,
// signal_p50_ratio, fanout_ratio (the wake's steps/s), and rows_read_per_claim (filled, nothing due).
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { WorkflowsDashboardModule } from '../src/dashboard/index.js';
import { WorkflowClient, WorkflowsModule, type WorkflowStore } from '../src/index.js';
import { fromMysql2, MySqlWorkflowStore } from '../src/mysql/index.js';
import { fromPg, PostgresWorkflowStore } from '../src/postgres/index.js';
import { postgresClaimStatements } from '../src/postgres/postgres-claim-statements.js';
import { createMysqlPool, dropTables, mysqlConnection } from '../test/support/mysql.js';
import { createPool, pgConnection } from '../test/support/postgres.js';
import { mysqlServerPid, procCpuMs } from './fixtures/server-cpu.js';
import { runW1, STEPS, ThreeSteps, type W1Run } from './fixtures/w1.js';
import { GO, SleepsAMonth, WAKE_KEY, WAKE_PREFIX, WaitsForGo, waitingHooks } from './fixtures/waiting-workflows.js';

const { values: argv } = parseArgs({
  options: {
    store: { type: 'string', default: 'postgres' },
    waiting: { type: 'string', default: '1000000' },
    finished: { type: 'string', default: '1000000' },
  },
});
if (argv.store !== 'postgres' && argv.store !== 'mysql')
  throw new Error(`--store "${argv.store}": give --store postgres or --store mysql.`);
const count = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} "${text}" is not a count: give e.g. --${name} 100000.`);
  return n;
};
const MYSQL = argv.store === 'mysql';
const WAITING = count('waiting', argv.waiting!);
const FINISHED = count('finished', argv.finished!);
const N = Number(process.env.N ?? 1000);
const REPS = Number(process.env.REPS ?? 3);
const W2_N = Number(process.env.W2_N ?? 50);
const SIGNALS = Number(process.env.SIGNALS ?? 40);
const WAKE = Number(process.env.WAKE ?? 10_000);
const CLAIMS = Number(process.env.CLAIMS ?? 200);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);
const LIMIT = 10;
const WORKFLOWS = ['bench.three-steps', 'bench.sleeps', 'bench.waits'].map((name) => ({ name, version: 1 }));
const base = `w5_${Date.now().toString(36)}`;
const made: string[] = [];

function say(message: string): void {
  process.stderr.write(`[bench:scale W5 ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

const table = (schema: string, name: string) => (MYSQL ? `\`${schema}_${name}\`` : `"${schema}".${name}`);
const p = (k: number) => (MYSQL ? '?' : `$${k}`);

/** One connection beside the stores' pools, for filling, counting, explaining and dropping. */
const check = await (async () => {
  if (MYSQL) {
    const connection = await mysql.createConnection({ ...mysqlConnection, multipleStatements: false });
    return {
      query: async (sql: string, params: unknown[] = []) =>
        (await connection.query(sql, params))[0] as Array<Record<string, unknown>>,
      raw: connection,
      end: () => connection.end(),
    };
  }
  const client = new pg.Client(pgConnection);
  await client.connect();
  return {
    query: async (sql: string, params: unknown[] = []) =>
      (await client.query(sql, params)).rows as Array<Record<string, unknown>>,
    raw: client,
    end: () => client.end(),
  };
})();
const one = async (sql: string, params: unknown[] = []) => Object.values((await check.query(sql, params))[0]!)[0];
const serverPid = MYSQL ? await mysqlServerPid((sql) => check.query(sql).then((rows) => [rows])) : null;

/**
 * A store on `schema` over a pool of `size`, with what reads the server CPU its connections used
 * so far (ms, by backend or thread), and what ends it.
 */
function openStore(schema: string, size: number, name: string) {
  if (MYSQL) {
    const pool = createMysqlPool({ connectionLimit: size });
    const threads = async () => {
      const ids = (
        pool as unknown as { pool: { _allConnections: { toArray(): Array<{ threadId: number }> } } }
      ).pool._allConnections
        .toArray()
        .map((c) => c.threadId);
      const used = new Map<number, number>();
      if (ids.length === 0 || serverPid === null) return used;
      for (const row of await check.query('SELECT TID FROM information_schema.PROCESSLIST WHERE ID IN (?)', [ids])) {
        const ms = procCpuMs(`/proc/${serverPid}/task/${row.TID}/stat`);
        if (ms !== null) used.set(Number(row.TID), ms);
      }
      return used;
    };
    return {
      store: new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }) as WorkflowStore,
      serverCpu: threads,
      pool,
      end: () => pool.end(),
    };
  }
  const pool = createPool({ max: size, application_name: name });
  const backends = async () => {
    const used = new Map<number, number>();
    for (const row of await check.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name])) {
      const ms = procCpuMs(`/proc/${row.pid}/stat`);
      if (ms !== null) used.set(Number(row.pid), ms);
    }
    return used;
  };
  return {
    store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }) as WorkflowStore,
    serverCpu: backends,
    pool,
    end: () => pool.end(),
  };
}
/** Counted over the backends/threads present at both ends. */
const cpuSince = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [id, ms]) => sum + (before.has(id) ? ms - before.get(id)! : 0), 0);

let apps = 0;
/** A Nest app on `schema` serving the dashboard on HTTP, its worker on (concurrency CONCURRENCY). */
async function openApp(schema: string) {
  if (!made.includes(schema)) made.push(schema);
  const name = `bench-w5-${++apps}`;
  const { store, serverCpu, end } = openStore(schema, CONCURRENCY + 2, name);
  @Module({
    imports: [
      WorkflowsModule.forRoot({ store, worker: { concurrency: CONCURRENCY } }),
      WorkflowsDashboardModule.forRoot({ path: '/workflows', guard: false }),
    ],
    providers: [ThreeSteps, SleepsAMonth, WaitsForGo],
  })
  class W5Module {}
  const app = await NestFactory.create(W5Module, { logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/workflows`;
  const client = app.get(WorkflowClient);
  const completed = async (prefix: string) =>
    Number(
      await one(
        `SELECT count(*) AS n FROM ${table(schema, 'instances')} WHERE status = 'completed' AND id LIKE ${p(1)}`,
        [`${prefix}%`],
      ),
    );
  return {
    client,
    url,
    completed,
    serverCpu,
    close: async () => {
      await app.close();
      await end();
    },
  };
}
type App = Awaited<ReturnType<typeof openApp>>;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const pct = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!;
const r = (x: number, digits = 2) => +x.toFixed(digits);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stepsPerS = (run: W1Run, n = N) => (n * STEPS) / (run.wallMs / 1000);
let prefixes = 0;
const fresh = (tag: string) => `${tag}${++prefixes}-`;

async function until(what: string, test: () => Promise<boolean>, timeoutMs = 600_000) {
  const started = Date.now();
  while (!(await test())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
const suspendedCount = (schema: string, like: string) =>
  one(`SELECT count(*) AS n FROM ${table(schema, 'instances')} WHERE status = 'suspended' AND id LIKE ${p(1)}`, [
    like,
  ]).then(Number);

/** The columns of `schema`'s table `name` a copy writes (generated ones aside), in order. */
async function columns(schema: string, name: string): Promise<string[]> {
  const rows = MYSQL
    ? await check.query(
        "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND extra NOT LIKE '%GENERATED%' ORDER BY ordinal_position",
        [`${schema}_${name}`],
      )
    : await check.query(
        "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER' ORDER BY ordinal_position",
        [schema, name],
      );
  return rows.map((row) => String(row.c ?? row.C));
}

/** 1..n as rows `n.g`. */
const numbers = (n: number) => {
  if (!MYSQL) return `generate_series(1::bigint, ${n}) AS n(g)`;
  const digits = Math.max(1, String(Math.max(0, n - 1)).length);
  const digit = (k: number) =>
    `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) AS d${k}`;
  return `(SELECT ${Array.from({ length: digits }, (_, k) => `d${k}.d * ${10 ** k}`).join(' + ')} + 1 AS g FROM ${Array.from({ length: digits }, (_, k) => digit(k)).join(', ')}) AS n`;
};
const concat = (...parts: string[]) => (MYSQL ? `CONCAT(${parts.join(', ')})` : `(${parts.join(' || ')})`);
const asText = (sql: string) => (MYSQL ? `CAST(${sql} AS CHAR)` : `(${sql})::text`);

/**
 * `n` copies of instance `template` of `schema` (its journal too, and on MySQL its waits), ids
 * `${prefix}0000001`..., each column as the template's unless `instance` gives an expression
 * (SQL over `t.` the template row, `n.g` the copy's number, `ID` its id); every text of the
 * journal and of `replaceIn` columns has `replace[0]` replaced by `replace[1]` (an expression).
 */
async function copies(
  schema: string,
  template: string,
  prefix: string,
  n: number,
  options: {
    instance?: Record<string, string>;
    replace?: [string, string][];
    replaceIn?: string[];
    waitTopicHash?: string;
  } = {},
) {
  if (n === 0) return 0;
  const started = performance.now();
  const id = concat(`'${prefix}'`, MYSQL ? `LPAD(n.g, 7, '0')` : `lpad(n.g::text, 7, '0')`);
  const rewrite = (sql: string, type: 'text' | 'json') => {
    let out = MYSQL || type === 'text' ? sql : `${sql}::text`;
    for (const [from, to] of options.replace ?? []) out = `replace(${out}, '${from}', ${to.replaceAll('ID', id)})`;
    return MYSQL || type === 'text' ? out : `${out}::json`;
  };
  const overrides = Object.fromEntries(
    Object.entries(options.instance ?? {}).map(([c, sql]) => [c, sql.replaceAll('ID', id)]),
  );
  const quote = (c: string) => (MYSQL ? `\`${c}\`` : `"${c}"`);
  const instanceColumns = await columns(schema, 'instances');
  const values = instanceColumns.map((c) =>
    c === 'id'
      ? id
      : c in overrides
        ? overrides[c]!
        : options.replaceIn?.includes(c)
          ? c === 'wait_topics' && !MYSQL
            ? `string_to_array(${rewrite(`array_to_string(t.wait_topics, '\u0001')`, 'text')}, '\u0001')`
            : rewrite(`t.${c}`, c === 'input' ? 'json' : 'text')
          : `t.${c}`,
  );
  const journalColumns = await columns(schema, 'journal');
  const journalValues = journalColumns.map((c) =>
    c === 'instance_id' ? id : c === 'entry' ? rewrite('t.entry', 'json') : `t.${quote(c)}`,
  );
  const tx = async (work: () => Promise<void>) => {
    await check.query('BEGIN');
    try {
      await work();
      await check.query('COMMIT');
    } catch (error) {
      await check.query('ROLLBACK');
      throw error;
    }
  };
  await tx(async () => {
    await check.query(
      `INSERT INTO ${table(schema, 'instances')} (${instanceColumns.map(quote).join(', ')}) SELECT ${values.join(', ')} FROM ${table(schema, 'instances')} t, ${numbers(n)} WHERE t.id = ${p(1)} AND n.g <= ${n}`,
      [template],
    );
    await check.query(
      `INSERT INTO ${table(schema, 'journal')} (${journalColumns.map(quote).join(', ')}) SELECT ${journalValues.join(', ')} FROM ${table(schema, 'journal')} t, ${numbers(n)} WHERE t.instance_id = ${p(1)} AND n.g <= ${n}`,
      [template],
    );
    if (MYSQL)
      await check.query(
        `INSERT INTO ${table(schema, 'waits')} (topic_hash, instance_id, runs) SELECT ${(options.waitTopicHash ?? 't.topic_hash').replaceAll('ID', id)}, ${id}, t.runs FROM ${table(schema, 'waits')} t, ${numbers(n)} WHERE t.instance_id = ? AND n.g <= ${n}`,
        [template],
      );
  });
  return Math.round(performance.now() - started);
}

async function analyze(schema: string) {
  for (const name of ['instances', 'journal', ...(MYSQL ? ['waits'] : [])])
    await check.query(MYSQL ? `ANALYZE TABLE ${table(schema, name)}` : `VACUUM ANALYZE ${table(schema, name)}`);
}

/** Real instances to copy, made by the app in `schema`: a sleeper, a waiter, a waiter on WAKE_KEY, a finished W1. */
async function templates(schema: string) {
  const app = await openApp(schema);
  try {
    await app.client.start(SleepsAMonth, Date.now() + 86_400_000, { id: 'tpl-sleeps' });
    await app.client.start(WaitsForGo, undefined, { id: 'tpl-waits' });
    await app.client.start(WaitsForGo, undefined, { id: `${WAKE_PREFIX}tpl` });
    await runW1(app.client, 1, 'tpl-done-', app.completed);
    await until('the templates to suspend', async () => (await suspendedCount(schema, 'tpl-%')) === 2);
    await until('the wake template to suspend', async () => (await suspendedCount(schema, `${WAKE_PREFIX}tpl`)) === 1);
    return Number(await one(`SELECT wake_at AS w FROM ${table(schema, 'instances')} WHERE id = 'tpl-sleeps'`));
  } finally {
    await app.close();
  }
}

/** The fleet: WAITING/2 sleepers (their wake-ups over the month ahead), WAITING/2 waiters, FINISHED finished. */
async function fill(schema: string, sleeperWakeAt: number) {
  const sleepers = Math.floor(WAITING / 2);
  const waiters = WAITING - sleepers;
  const now = Date.now();
  const spacing = Math.max(1, Math.floor((30 * 86_400_000) / Math.max(1, sleepers)));
  const wake = `(${now + 3_600_000} + n.g * ${spacing})`;
  const back = (ms: number) => ({ created_at: `t.created_at - n.g * ${ms}`, updated_at: `t.updated_at - n.g * ${ms}` });
  const ms = [
    await copies(schema, 'tpl-sleeps', 'sleep-', sleepers, {
      instance: { wake_at: wake, ...back(3) },
      replace: [[String(sleeperWakeAt), asText(wake)]],
      replaceIn: ['input'],
    }),
    await copies(schema, 'tpl-waits', 'wait-', waiters, {
      instance: back(3),
      replace: [['tpl-waits', 'ID']],
      replaceIn: ['wait_topics'],
      waitTopicHash: `UNHEX(SHA2(CONCAT('2:go=', ID), 256))`,
    }),
    await copies(schema, 'tpl-done-0', 'done-', FINISHED, { instance: back(2) }),
  ];
  const started = performance.now();
  await analyze(schema);
  return { insert_ms: ms.reduce((a, b) => a + b, 0), analyze_ms: Math.round(performance.now() - started) };
}

/** REPS W1 runs after a warm-up: steps/s (median) and Node's and the server's CPU per workflow. */
async function w1(app: App) {
  await runW1(app.client, Math.min(N, 200), fresh('warm-'), app.completed);
  const runs: W1Run[] = [];
  const server: number[] = [];
  for (let k = 0; k < REPS; k++) {
    const before = await app.serverCpu();
    runs.push(await runW1(app.client, N, fresh('w1-'), app.completed));
    server.push(cpuSince(before, await app.serverCpu()) / N);
  }
  return {
    steps_per_s: r(median(runs.map((run) => stepsPerS(run))), 1),
    runs_steps_per_s: runs.map((run) => r(stepsPerS(run), 1)),
    node_cpu_ms_per_wf: r(median(runs.map((run) => run.nodeCpuMs / N)), 3),
    server_cpu_ms_per_wf: r(median(server), 3),
  };
}

/** W2: W2_N workflows one at a time, start to completed: p50/p95 ms and the server's CPU per workflow. */
async function w2(app: App) {
  const times: number[] = [];
  const before = await app.serverCpu();
  for (let k = 0; k < W2_N; k++) times.push((await runW1(app.client, 1, fresh('w2-'), app.completed)).wallMs);
  return {
    p50_ms: r(median(times)),
    p95_ms: r(pct(times, 0.95)),
    server_cpu_ms_per_wf: r(cpuSince(before, await app.serverCpu()) / W2_N, 3),
  };
}

/** SIGNALS waiting instances, each signalled in turn: the time until its next step ran. */
async function signalLatency(app: App, schema: string) {
  const prefix = fresh('lat-');
  for (let k = 0; k < SIGNALS; k++) await app.client.start(WaitsForGo, undefined, { id: `${prefix}${k}` });
  await until('the signalled ones to wait', async () => (await suspendedCount(schema, `${prefix}%`)) === SIGNALS);
  await sleep(200);
  const times: number[] = [];
  for (let k = 0; k < SIGNALS; k++) {
    const id = `${prefix}${k}`;
    const resumed = new Promise<number>((resolve) => {
      waitingHooks.resumed = (who, at) => who === id && resolve(at);
    });
    const sent = performance.now() + performance.timeOrigin;
    await app.client.signal(GO, sent, { key: id });
    times.push((await resumed) - sent);
  }
  waitingHooks.resumed = null;
  return { p50_ms: r(median(times)), p95_ms: r(pct(times, 0.95)), signals: SIGNALS };
}

/** WAKE copies waiting on WAKE_KEY, one signal: until all ran their steps after the wait. */
async function wakeMany(app: App, schema: string) {
  if (WAKE === 0) return null;
  await copies(schema, `${WAKE_PREFIX}tpl`, `${WAKE_PREFIX}c-`, WAKE, {});
  let ran = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  waitingHooks.resumed = (id) => {
    if (id.startsWith(`${WAKE_PREFIX}c-`) && ++ran === WAKE) done();
  };
  const started = performance.now();
  await app.client.signal(GO, Date.now(), { key: WAKE_KEY });
  await all;
  const firstSteps = performance.now() - started;
  await until('the woken to complete', async () => (await app.completed(`${WAKE_PREFIX}c-`)) >= WAKE);
  const ms = performance.now() - started;
  waitingHooks.resumed = null;
  return {
    instances: WAKE,
    all_next_step_ms: Math.round(firstSteps),
    all_completed_ms: Math.round(ms),
    steps_per_s: r((WAKE * STEPS) / (ms / 1000), 1),
  };
}

/** The dashboard's list page and list({ status: 'suspended' })'s first page, p50 of 20 after 3. */
async function lists(app: App) {
  const time = async (fn: () => Promise<unknown>) => {
    for (let k = 0; k < 3; k++) await fn();
    const samples: number[] = [];
    for (let k = 0; k < 20; k++) {
      const t = performance.now();
      await fn();
      samples.push(performance.now() - t);
    }
    return r(median(samples));
  };
  const page = async (query: string) => {
    const response = await fetch(`${app.url}${query}`);
    await response.text();
    if (response.status !== 200) throw new Error(`dashboard ${query}: HTTP ${response.status}`);
  };
  return {
    dashboard_page_ms: await time(() => page('')),
    dashboard_suspended_page_ms: await time(() => page('?status=suspended')),
    list_suspended_ms: await time(() => app.client.list({ status: 'suspended' })),
  };
}

/** The claim with nothing due and with 10 due: time, rows read, plan. */
async function claims(schema: string) {
  const { store, pool, end } = openStore(schema, 1, `bench-w5-claim-${schema}`);
  await store.init?.();
  const due = 'due10-';
  const request = () => {
    const now = Date.now();
    return {
      now,
      limit: LIMIT,
      workflows: WORKFLOWS,
      owner: 'bench-w5',
      token: `t-${Math.random()}`,
      leaseUntil: now + 30_000,
    };
  };
  const putBack = () =>
    check.query(
      `UPDATE ${table(schema, 'instances')} SET lease_token = NULL, lease_owner = NULL, lease_until = NULL, status = 'pending', runs = 0, wake_at = ${p(1)} WHERE id LIKE ${p(2)}`,
      [Date.now() - 1000, `${due}%`],
    );
  const floorQuery = () => (MYSQL ? (pool as mysql.Pool).query('SELECT 1') : (pool as pg.Pool).query('SELECT 1'));
  const handlerReads = async () => {
    // Index entries that index condition pushdown rejected never reach Handler_read_*: MariaDB counts them apart.
    const [rows] = await (pool as mysql.Pool).query(
      "SHOW SESSION STATUS WHERE Variable_name LIKE 'Handler_read%' OR Variable_name LIKE 'Handler_icp_%'",
    );
    return (rows as Array<{ Variable_name: string; Value: string }>).reduce(
      (sum, row) => sum + (row.Variable_name === 'Handler_icp_match' ? -1 : 1) * Number(row.Value),
      0,
    );
  };
  try {
    const floor: number[] = [];
    for (let k = 0; k < CLAIMS; k++) {
      const t = performance.now();
      await floorQuery();
      floor.push(performance.now() - t);
    }
    const run = async (expect: number) => {
      const times: number[] = [];
      let reads = 0;
      for (let k = 0; k < CLAIMS + 10; k++) {
        const before = MYSQL ? await handlerReads() : 0;
        const t = performance.now();
        const claim = await store.claim(request());
        const ms = performance.now() - t;
        if (MYSQL && k >= 10) reads += (await handlerReads()) - before;
        if (claim.instances.length !== expect)
          throw new Error(`a claim took ${claim.instances.length} instances, expected ${expect}`);
        if (expect > 0) await putBack();
        if (k >= 10) times.push(ms);
      }
      if (MYSQL) {
        // SHOW STATUS reads rows of its own: counted once with nothing between.
        const a = await handlerReads();
        const own = (await handlerReads()) - a;
        reads = reads / CLAIMS - own;
      }
      return { reads, times };
    };
    const idle = await run(0);
    await copies(schema, 'tpl-done-0', due, LIMIT, {
      instance: {
        status: `'pending'`,
        wake_at: String(Date.now() - 1000),
        output: 'NULL',
        lease_token: 'NULL',
        lease_owner: 'NULL',
        lease_until: 'NULL',
        runs: '0',
      },
    });
    const busy = await run(LIMIT);
    const pgReads = !MYSQL ? await postgresClaimReads(schema) : null;
    const result = (label: string, m: { reads: number; times: number[] }, rows: number | undefined) => ({
      [`${label}_p50_ms`]: r(median(m.times), 3),
      [`${label}_p95_ms`]: r(pct(m.times, 0.95), 3),
      [`${label}_rows_read`]: r(MYSQL ? m.reads : rows!, 1),
    });
    return {
      round_trip_p50_ms: r(median(floor), 3),
      ...result('nothing_due', idle, pgReads?.idle),
      ...result('due_10', busy, pgReads?.busy),
      plans: MYSQL ? await mysqlPlans(schema) : pgReads!.plans,
    };
  } finally {
    await check.query(`DELETE FROM ${table(schema, 'instances')} WHERE id LIKE ${p(1)}`, [`${due}%`]);
    await end();
  }
}

/**
 * PostgreSQL: the rows the claim statement reads (heap rows fetched through indexes and read by
 * sequential scans, pg_stat_xact_user_tables) with the 10 due of `claims()` due and with none,
 * each in a transaction rolled back, and its plans.
 */
async function postgresClaimReads(schema: string) {
  const text = postgresClaimStatements(schema).claim;
  const now = Date.now();
  const params = (at: number) => [
    at,
    WORKFLOWS.map((w) => w.name),
    WORKFLOWS.map(() => 1),
    LIMIT,
    'x',
    'bench',
    at + 30_000,
  ];
  const reads = async (at: number) => {
    await check.query('BEGIN');
    try {
      await check.query(text, params(at));
      const [row] = await check.query(
        'SELECT coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0) AS n FROM pg_stat_xact_user_tables WHERE schemaname = $1',
        [schema],
      );
      const plan = (await check.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params(at)))
        .map((row) => String(row['QUERY PLAN']))
        .join('\n');
      return { n: Number(row!.n), plan };
    } finally {
      await check.query('ROLLBACK');
    }
  };
  // Before the due ones' wake-up: nothing due.
  const idle = await reads(now - 10_000);
  const busy = await reads(now + 1000);
  say(`${schema}: claim with nothing due, ${idle.n} rows read:\n${idle.plan}`);
  say(`${schema}: claim with ${LIMIT} due, ${busy.n} rows read:\n${busy.plan}`);
  return { idle: idle.n, busy: busy.n, plans: { nothing_due: idle.plan, due_10: busy.plan } };
}

/**
 * MySQL: the plan of the claim's search (mysql-claim.ts's `due`, written out here for the worker's
 * three workflows), with nothing due: MariaDB's ANALYZE FORMAT=JSON (rows read, `r_rows`), or EXPLAIN.
 */
async function mysqlPlans(schema: string) {
  const now = Date.now() - 10_000;
  const sql = `SELECT id FROM ${table(schema, 'instances')} FORCE INDEX (instances_due)
WHERE claim_priority IS NOT NULL AND wake_at <= ? AND (lease_token IS NULL OR lease_until < ?) AND status IN ('pending', 'running', 'suspended', 'compensating')
  AND (workflow, version) IN ((?, 1), (?, 1), (?, 1))
ORDER BY claim_priority, wake_at, created_at, id LIMIT ${LIMIT}`;
  const params = [now, now, ...WORKFLOWS.map((w) => w.name)];
  let plan: string;
  try {
    plan = JSON.stringify((await check.query(`ANALYZE FORMAT=JSON ${sql}`, params))[0]);
  } catch {
    plan = JSON.stringify(await check.query(`EXPLAIN ${sql}`, params));
  }
  say(`${schema}: the claim's search with nothing due:\n${plan}`);
  return { nothing_due: plan };
}

/** purge() of everything finished before `cutoff`, timed, and W1 steps/s while it runs. */
async function purge(app: App, schema: string, cutoff: number) {
  const locks = MYSQL ? () => one(`SELECT count(*) AS n FROM ${table(schema, 'locks')}`).then(Number) : null;
  const locksBefore = locks ? await locks() : undefined;
  const started = performance.now();
  let ended = 0;
  const purging = app.client.purge({ olderThan: new Date(cutoff) }).then((result) => {
    ended = performance.now();
    return result;
  });
  const during: number[] = [];
  do during.push(stepsPerS(await runW1(app.client, N, fresh('p-'), app.completed)));
  while (ended === 0);
  const result = await purging;
  return {
    purged: result.instances,
    purge_ms: Math.round(ended - started),
    w1_during_steps_per_s: r(median(during), 1),
    w1_runs_during: during.length,
    ...(locks ? { locks_rows_before: locksBefore, locks_rows_after: await locks() } : {}),
  };
}

async function diskBytes(schema: string) {
  const instances = Number(await one(`SELECT count(*) AS n FROM ${table(schema, 'instances')}`));
  const bytes = MYSQL
    ? Number(
        await one(
          'SELECT sum(data_length + index_length) AS b FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?',
          [`${schema}\\_%`],
        ),
      )
    : Number(
        await one(
          "SELECT sum(pg_total_relation_size(c.oid)) AS b FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'r'",
          [schema],
        ),
      );
  return { instances, bytes, bytes_per_instance: instances ? Math.round(bytes / instances) : null };
}

/** PostgreSQL: a LISTEN on the schema's channels; how many notifications it heard during `work`. */
async function notifications(schema: string, work: () => Promise<unknown>) {
  if (MYSQL) return null;
  const listener = new pg.Client(pgConnection);
  await listener.connect();
  let heard = 0;
  listener.on('notification', () => heard++);
  await listener.query(`LISTEN "${schema}_wake"`);
  await listener.query(`LISTEN "${schema}_wake_ended"`);
  await work();
  await sleep(200);
  await listener.end();
  return heard;
}

/** Every measure on one schema (its templates already made, its fleet already in). */
async function measure(schema: string) {
  const app = await openApp(schema);
  const out: Record<string, unknown> = {};
  try {
    out.w1 = await w1(app);
    say(`${schema}: W1 ${JSON.stringify(out.w1)}`);
    out.notifications_per_w1_wf = !MYSQL
      ? r((await notifications(schema, () => runW1(app.client, N, fresh('n-'), app.completed)))! / N, 3)
      : undefined;
    out.w2 = await w2(app);
    say(`${schema}: W2 ${JSON.stringify(out.w2)}`);
    out.signal = await signalLatency(app, schema);
    say(`${schema}: signal -> next step ${JSON.stringify(out.signal)}`);
    out.wake = await wakeMany(app, schema);
    say(`${schema}: one signal, ${WAKE} woken ${JSON.stringify(out.wake)}`);
    out.lists = await lists(app);
    say(`${schema}: lists ${JSON.stringify(out.lists)}`);
  } finally {
    await app.close();
  }
  out.claim = await claims(schema);
  const { plans: _plans, ...claimFigures } = out.claim as Record<string, unknown>;
  say(`${schema}: claim ${JSON.stringify(claimFigures)}`);
  out.disk = await diskBytes(schema);
  const purgeApp = await openApp(schema);
  try {
    out.purge = await purge(purgeApp, schema, fillCutoff);
    say(`${schema}: purge ${JSON.stringify(out.purge)}`);
  } finally {
    await purgeApp.close();
  }
  out.rss_mb = r(process.memoryUsage().rss / 2 ** 20, 1);
  return out;
}

const empty = `${base}_e`;
const filled = `${base}_f`;
let fillCutoff = 0;
const server = String(await one(MYSQL ? 'SELECT VERSION() AS v' : 'SELECT version() AS v')).split(' on ')[0];
const result: Record<string, unknown> = {
  system: `@nestjs/workflows W5 (${MYSQL ? 'MySQL store' : 'PostgreSQL store'} on ${server})`,
  waiting: WAITING,
  finished: FINISHED,
  n: N,
  reps: REPS,
  concurrency: CONCURRENCY,
};
try {
  for (const schema of [empty, filled]) made.push(schema);
  const wakeAt = { e: await templates(empty), f: await templates(filled) };
  say(`filling ${filled}: ${WAITING} waiting, ${FINISHED} finished`);
  result.fill = await fill(filled, wakeAt.f);
  say(`filled: ${JSON.stringify(result.fill)}`);
  await analyze(empty);
  fillCutoff = Date.now();
  const e = await measure(empty);
  const f = await measure(filled);
  result.empty = e;
  result.filled = f;
  const get = (o: Record<string, unknown>, path: string) =>
    path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], o) as number;
  const ratio = (path: string) => r(get(f, path) / get(e, path));
  Object.assign(result, {
    w1_ratio: ratio('w1.steps_per_s'),
    claim_p50_ratio: ratio('claim.nothing_due_p50_ms'),
    claim_due_p50_ratio: ratio('claim.due_10_p50_ms'),
    signal_p50_ratio: ratio('signal.p50_ms'),
    fanout_ratio: ratio('wake.steps_per_s'),
    fanout_vs_w1: r(get(f, 'wake.steps_per_s') / get(f, 'w1.steps_per_s')),
    server_cpu_w1_ratio: ratio('w1.server_cpu_ms_per_wf'),
    rows_read_per_claim: get(f, 'claim.nothing_due_rows_read'),
    rows_read_per_claim_due_10: get(f, 'claim.due_10_rows_read'),
  });
  const rows: Array<[string, string]> = [
    ['W1 steps/s', 'w1.steps_per_s'],
    ['W1 Node CPU ms/wf', 'w1.node_cpu_ms_per_wf'],
    ['W1 server CPU ms/wf', 'w1.server_cpu_ms_per_wf'],
    ['W2 p50 ms', 'w2.p50_ms'],
    ['W2 server CPU ms/wf', 'w2.server_cpu_ms_per_wf'],
    ['claim, nothing due, p50 ms', 'claim.nothing_due_p50_ms'],
    ['claim, nothing due, p95 ms', 'claim.nothing_due_p95_ms'],
    ['claim, nothing due, rows read', 'claim.nothing_due_rows_read'],
    ['claim, 10 due, p50 ms', 'claim.due_10_p50_ms'],
    ['claim, 10 due, p95 ms', 'claim.due_10_p95_ms'],
    ['claim, 10 due, rows read', 'claim.due_10_rows_read'],
    ['SELECT 1 round trip p50 ms', 'claim.round_trip_p50_ms'],
    ['signal -> next step p50 ms', 'signal.p50_ms'],
    ['signal -> next step p95 ms', 'signal.p95_ms'],
    [`one signal, ${WAKE} woken: steps/s`, 'wake.steps_per_s'],
    [`one signal, ${WAKE} woken: all next steps ms`, 'wake.all_next_step_ms'],
    ['purge: instances', 'purge.purged'],
    ['purge ms', 'purge.purge_ms'],
    ['W1 steps/s during purge', 'purge.w1_during_steps_per_s'],
    ['dashboard list page p50 ms', 'lists.dashboard_page_ms'],
    ['dashboard ?status=suspended p50 ms', 'lists.dashboard_suspended_page_ms'],
    ["list({ status: 'suspended' }) p50 ms", 'lists.list_suspended_ms'],
    ['bytes per instance', 'disk.bytes_per_instance'],
    ['RSS after, MB', 'rss_mb'],
    ...(MYSQL
      ? ([
          ['locks rows before purge', 'purge.locks_rows_before'],
          ['locks rows after purge', 'purge.locks_rows_after'],
        ] as Array<[string, string]>)
      : ([['notifications heard per W1 workflow', 'notifications_per_w1_wf']] as Array<[string, string]>)),
  ];
  console.log(`\n| W5 ${result.system}, ${WAITING} waiting + ${FINISHED} finished | empty | filled | filled / empty |`);
  console.log('|---|---|---|---|');
  for (const [label, path] of rows) {
    const a = get(e, path);
    const b = get(f, path);
    console.log(`| ${label} | ${a} | ${b} | ${typeof a === 'number' && a !== 0 ? r(b / a) : ''} |`);
  }
} finally {
  for (const schema of made)
    if (MYSQL) {
      const pool = createMysqlPool({ connectionLimit: 1 });
      await dropTables(pool, schema);
      await pool.end();
    } else await check.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await check.end();
}
console.log(JSON.stringify(result));
