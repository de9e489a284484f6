// Benchmarks @nestjs/workflows on MySQL / MariaDB, beside the server's own limit measured in the same run:
//   limit: single-row UPDATE commits per second (autocommit, each client its own row) at 1 and 10 clients,
//          LIMIT_SECONDS each: what the server's commit path allows this machine.
//   W1: N instances of a 3-step workflow started at once, one worker process, concurrency 10, until the
//       database shows all N completed (workflows/s, steps/s).
//   W2: one 3-step workflow started and awaited, W2_REPS times in a row (p50, p95 ms).
//   W1 steady (w1_steady_*): W1 again at the end, after W1_STEADY_WARMUP more workflows, once Node's
//       CPU per workflow has settled (the first W1 runs in a process still warming up).
//   Each W1 also gets the 10-client limit measured just before and just after it (the limit moves
//   by half between runs minutes apart on a shared machine): w1_*_vs_limit_around is against their mean.
// Write cost per workflow: commits counted at the store's executor (each transaction, each autocommit or compound
// INSERT/UPDATE/DELETE), statements counted at the pool (each a round trip, the wake-up poll's
// included), the server's InnoDB fsyncs (Innodb_data_fsyncs: redo log and data files; group commit can make
// them fewer than commits), and the server's CPU (all its threads, from /proc when it runs on this machine;
// other clients' work included). Run: `npm run bench:mysql` (MariaDB/MySQL at MYSQL_HOST..., database test).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { WorkflowClient, WorkflowEvents, WorkflowsModule } from '../src/index.js';
import { MySqlWorkflowStore, fromMysql2, type SqlExecutor } from '../src/mysql/index.js';
import { createMysqlPool, dropTables, mysqlConnection } from '../test/support/mysql.js';
import { mysqlServerPid, procCpuMs } from './fixtures/server-cpu.js';
import { runW1, runW2Once, STEPS, ThreeSteps } from './fixtures/w1.js';

const N = Number(process.env.N ?? 1000);
const W2_REPS = Number(process.env.W2_REPS ?? 50);
const W1_WARMUP = Number(process.env.W1_WARMUP ?? 20);
const W1_STEADY_WARMUP = Number(process.env.W1_STEADY_WARMUP ?? 3000);
const W2_WARMUP = Number(process.env.W2_WARMUP ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 10);
const LIMIT_SECONDS = Number(process.env.LIMIT_SECONDS ?? 5);
/** PREPARED_STATEMENTS=0: `fromMysql2()` prepares nothing (the default prepares the hot path's statements on MariaDB). */
const PREPARED = process.env.PREPARED_STATEMENTS;
const schema = `bench_${Date.now().toString(36)}`;

/** The store's commits: a transaction, or a statement that writes outside one. */
let commits = 0;
function counting(executor: SqlExecutor): SqlExecutor {
  return {
    async query(sql, params, options) {
      const result = await executor.query(sql, params, options);
      // A compound statement (MariaDB's one-round-trip batches) opens and commits one transaction.
      if (/^\s*(INSERT|UPDATE|DELETE|BEGIN\s+NOT\s+ATOMIC)\b/i.test(sql)) commits++;
      return result;
    },
    transaction(fn, options) {
      commits++;
      return executor.transaction(fn, options);
    },
    close: () => executor.close?.(),
  };
}

/**
 * Statements sent to the server (each one round trip: mysql2 sends the next when the last
 * answered), counted at each connection of the pool as mysql2 opens it: every statement reaches
 * the connection's own `query()` or, prepared, `execute()`, whether it came through the promise
 * API or the callback API beneath it (which `fromMysql2()` uses), on the pool or on a connection
 * checked out of it. A prepare (once per text and connection) is not counted apart.
 */
let statements = 0;
const pool = createMysqlPool({ connectionLimit: CONCURRENCY + 2 });
type Sends = Record<'query' | 'execute', (...args: unknown[]) => unknown>;
(pool as unknown as { pool: { on(event: 'connection', listener: (connection: Sends) => void): void } }).pool.on(
  'connection',
  (connection) => {
    // Text statements, and prepared ones (their first execute on a connection prepares it: one more round trip).
    for (const method of ['query', 'execute'] as const) {
      const send = connection[method].bind(connection);
      connection[method] = (...args: unknown[]) => {
        statements++;
        return send(...args);
      };
    }
  },
);
const check = await mysql.createConnection(mysqlConnection);
const status = async (name: string) => {
  const [rows] = await check.query('SHOW GLOBAL STATUS LIKE ?', [name]);
  return Number((rows as Array<{ Value: string }>)[0]!.Value);
};

const serverPid = await mysqlServerPid((sql) => check.query(sql));
/** The server process's CPU ms so far (all its threads), or `null` when it runs elsewhere. */
const serverCpuMs = () => (serverPid === null ? null : procCpuMs(`/proc/${serverPid}/stat`));

/** Single-row UPDATE commits per second at `clients` clients, each on its own connection and row. */
async function commitLimit(clients: number): Promise<number> {
  const table = `\`${schema}_limit\``;
  await check.query(`CREATE TABLE IF NOT EXISTS ${table} (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE = InnoDB`);
  await check.query(
    `INSERT IGNORE INTO ${table} VALUES ${Array.from({ length: 10 }, (_, i) => `(${i}, 0)`).join(', ')}`,
  );
  const connections = await Promise.all(Array.from({ length: clients }, () => mysql.createConnection(mysqlConnection)));
  const end = performance.now() + LIMIT_SECONDS * 1000;
  let total = 0;
  const started = performance.now();
  await Promise.all(
    connections.map(async (connection, index) => {
      while (performance.now() < end) {
        await connection.query(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [index]);
        total++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(connections.map((connection) => connection.end()));
  return total / seconds;
}

@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new MySqlWorkflowStore({
        executor: counting(fromMysql2(pool, PREPARED === undefined ? {} : { preparedStatements: Number(PREPARED) })),
        schema,
      }),
      worker: { concurrency: CONCURRENCY },
    }),
  ],
  providers: [ThreeSteps],
})
class BenchModule {}

const limit1 = await commitLimit(1);
const limit10 = await commitLimit(10);

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const events = app.get(WorkflowEvents);

async function completedCount(prefix: string): Promise<number> {
  const [rows] = await check.query(
    `SELECT COUNT(*) AS n FROM \`${schema}_instances\` WHERE status = 'completed' AND id LIKE ?`,
    [`${prefix}%`],
  );
  return Number((rows as Array<{ n: number }>)[0]!.n);
}

function w1(prefix: string, n: number) {
  return runW1(client, n, prefix, completedCount);
}

function w2Once(id: string): Promise<number> {
  return runW2Once(client, events, id);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

// The worker's writes land just after the instances complete: wait for them before reading counters.
const quiet = () => new Promise((resolve) => setTimeout(resolve, 500));

/** One measured W1 run of `N`: throughput and its cost per workflow. */
async function measuredW1(prefix: string) {
  const limitBefore = await commitLimit(10);
  const commits0 = commits;
  const statements0 = statements;
  const fsyncs0 = await status('Innodb_data_fsyncs');
  const server0 = serverCpuMs();
  const { wallMs, nodeCpuMs, nodeThreadsMs, startsMs } = await w1(prefix, N);
  await quiet();
  const server1 = serverCpuMs();
  const fsyncs = (await status('Innodb_data_fsyncs')) - fsyncs0;
  // Counted before the limit's run: the store's wake-up poll goes on meanwhile.
  const runCommits = commits - commits0;
  const runStatements = statements - statements0;
  const limitAfter = await commitLimit(10);
  const wfPerS = N / (wallMs / 1000);
  return {
    workflows_per_s: +wfPerS.toFixed(1),
    steps_per_s: +(wfPerS * STEPS).toFixed(1),
    steps_per_s_vs_10_client_limit: +((wfPerS * STEPS) / limit10).toFixed(2),
    limit_10_clients_before_after: [Math.round(limitBefore), Math.round(limitAfter)],
    steps_per_s_vs_limit_around: +((wfPerS * STEPS) / ((limitBefore + limitAfter) / 2)).toFixed(2),
    wall_ms: Math.round(wallMs),
    // Until every start() of the run returned (its creates committed; the worker runs meanwhile).
    starts_ms: startsMs,
    commits_per_wf: +(runCommits / N).toFixed(2),
    statements_per_wf: +(runStatements / N).toFixed(2),
    node_cpu_ms_per_wf: +(nodeCpuMs / N).toFixed(3),
    // Of it, the main thread's and the other threads' (mostly V8's optimizing compiler while the process is new).
    node_main_thread_ms_per_wf: nodeThreadsMs === null ? null : +(nodeThreadsMs.main / N).toFixed(3),
    node_other_threads_ms_per_wf: nodeThreadsMs === null ? null : +(nodeThreadsMs.other / N).toFixed(3),
    innodb_fsyncs_per_wf: +(fsyncs / N).toFixed(2),
    // Everything the server did meanwhile (other clients' work included), over the W1 run and the 0.5 s after it.
    server_cpu_ms_per_wf: server0 === null || server1 === null ? null : +((server1 - server0) / N).toFixed(3),
  };
}
const prefixed = (prefix: string, figures: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(figures).map(([name, value]) => [`${prefix}${name}`, value]));

await w1('warm-', W1_WARMUP);
await quiet();
const firstW1 = await measuredW1('w1-');

for (let k = 0; k < W2_WARMUP; k++) await w2Once(`w2-warm-${k}`);
await quiet();
const commits0 = commits;
const statements0 = statements;
const fsyncs0 = await status('Innodb_data_fsyncs');
const latencies: number[] = [];
for (let k = 0; k < W2_REPS; k++) latencies.push(await w2Once(`w2-${k}`));
await quiet();
const w2Commits = commits - commits0;
const w2Statements = statements - statements0;
const w2Fsyncs = (await status('Innodb_data_fsyncs')) - fsyncs0;

// W1 once more after W1_STEADY_WARMUP more workflows: the run above is mostly the process's warm-up
// (the JIT's, the heap's), with Node's CPU per workflow about twice what it settles at.
await w1('steady-warm-', W1_STEADY_WARMUP);
await quiet();
const steadyW1 = await measuredW1('w1-steady-');

const [version] = await check.query('SELECT VERSION() AS v');
console.log(
  JSON.stringify({
    system: `@nestjs/workflows (MySQL store on ${(version as Array<{ v: string }>)[0]!.v})`,
    limit_update_commits_per_s_1_client: Math.round(limit1),
    limit_update_commits_per_s_10_clients: Math.round(limit10),
    ...prefixed('w1_', firstW1),
    w2_p50_ms: +percentile(latencies, 50).toFixed(1),
    w2_p95_ms: +percentile(latencies, 95).toFixed(1),
    w2_commits_per_wf: +(w2Commits / W2_REPS).toFixed(2),
    w2_statements_per_wf: +(w2Statements / W2_REPS).toFixed(2),
    w2_innodb_fsyncs_per_wf: +(w2Fsyncs / W2_REPS).toFixed(2),
    ...prefixed('w1_steady_', steadyW1),
  }),
);

await app.close();
await dropTables(pool, schema);
await pool.end();
await check.end();
