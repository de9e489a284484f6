// Where MariaDB W1's time goes, in steady state: W1 (N instances of the 3-step workflow, one worker,
// concurrency 10) REPS times in one process after a warm-up, each run with
//   - Node's CPU per workflow (the whole process, process.cpuUsage);
//   - the server's CPU per workflow: the threads serving this pool's connections (MariaDB's
//     information_schema.PROCESSLIST.TID, read from /proc), and the whole server process (other
//     clients' work and InnoDB's background threads included);
//   - the share of the wall time the store waited on at least one statement (the rest Node alone);
//   - per statement kind, the time from sending it to its answer, per workflow (COMMIT: a
//     transaction's commit, and its rollback).
// For MariaDB on this machine (the server's pid file and /proc readable). Run:
// `node --import ./scripts/register-ts.mjs bench/mysql-w1-cpu.bench.ts` (N, REPS).
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { WorkflowClient, WorkflowsModule } from '../src/index.js';
import { MySqlWorkflowStore, fromMysql2, type SqlExecutor } from '../src/mysql/index.js';
import { createMysqlPool, dropTables, mysqlConnection } from '../test/support/mysql.js';
import { mysqlServerPid, procCpuMs } from './fixtures/server-cpu.js';
import { runW1, ThreeSteps } from './fixtures/w1.js';

const N = Number(process.env.N ?? 2000);
const REPS = Number(process.env.REPS ?? 3);
const schema = `bcpu_${Date.now().toString(36)}`;
const pool = createMysqlPool({ connectionLimit: 12 });
const check = await mysql.createConnection(mysqlConnection);
const serverPid = await mysqlServerPid((sql) => check.query(sql));
if (serverPid === null)
  throw new Error('mysql-w1-cpu: the server must run on this machine, its pid file and /proc readable.');
const cpuMs = (path: string) => procCpuMs(path) ?? 0;

/** CPU ms of the server threads serving this pool's connections now, by thread id. */
async function connectionThreadsCpu(): Promise<Map<number, number>> {
  const connections = (
    pool as unknown as { pool: { _allConnections: { toArray(): Array<{ threadId: number }> } } }
  ).pool._allConnections.toArray();
  const [rows] = await check.query('SELECT TID FROM information_schema.PROCESSLIST WHERE ID IN (?)', [
    connections.map((c) => c.threadId),
  ]);
  return new Map(
    (rows as Array<{ TID: number }>).map(({ TID }) => [TID, cpuMs(`/proc/${serverPid}/task/${TID}/stat`)]),
  );
}

/** Counted only over threads present at both ends (a connection opened meanwhile is missed; closed ones too). */
function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [tid, ms] of after) if (before.has(tid)) sum += ms - before.get(tid)!;
  return sum;
}

let outstanding = 0;
let since = 0;
let waitingMs = 0;
const kinds = new Map<string, { count: number; ms: number }>();
function enter(): void {
  const now = performance.now();
  if (outstanding > 0) waitingMs += now - since;
  since = now;
  outstanding++;
}
function leave(kind: string, started: number): void {
  const now = performance.now();
  waitingMs += now - since;
  since = now;
  outstanding--;
  const entry = kinds.get(kind) ?? { count: 0, ms: 0 };
  entry.count++;
  entry.ms += now - started;
  kinds.set(kind, entry);
}
async function timedStatement<T>(kind: string, send: () => Promise<T>): Promise<T> {
  const started = performance.now();
  enter();
  try {
    return await send();
  } finally {
    leave(kind, started);
  }
}
const kindOf = (sql: string) =>
  sql
    .replace(/`[^`]*`/g, 'T')
    .replace(/\s+/g, ' ')
    .slice(0, 60);
function timedQueries(executor: SqlExecutor): SqlExecutor {
  return {
    ...executor,
    query: (sql, params, options) => timedStatement(kindOf(sql), () => executor.query(sql, params, options)),
  };
}
const timed: SqlExecutor = (() => {
  const executor = fromMysql2(pool);
  return {
    query: (sql, params, options) => timedStatement(kindOf(sql), () => executor.query(sql, params, options)),
    transaction(fn, options) {
      let ending = 0;
      return executor
        .transaction(
          (tx) =>
            fn(timedQueries(tx)).finally(() => {
              ending = performance.now();
              enter();
            }),
          options,
        )
        .finally(() => {
          if (ending) leave('COMMIT', ending);
        });
    },
    close: () => executor.close?.(),
  };
})();

@Module({
  imports: [
    WorkflowsModule.forRoot({
      store: new MySqlWorkflowStore({ executor: timed, schema }),
      worker: { concurrency: 10 },
    }),
  ],
  providers: [ThreeSteps],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error', 'warn'] });
await app.init();
const client = app.get(WorkflowClient);
const completed = async (prefix: string) => {
  const [rows] = await check.query(
    `SELECT COUNT(*) AS n FROM \`${schema}_instances\` WHERE status = 'completed' AND id LIKE ?`,
    [`${prefix}%`],
  );
  return Number((rows as Array<{ n: number }>)[0]!.n);
};
await runW1(client, 200, 'warm-', completed);
for (let rep = 0; rep < REPS; rep++) {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const threads0 = await connectionThreadsCpu();
  const server0 = cpuMs(`/proc/${serverPid}/stat`);
  waitingMs = 0;
  kinds.clear();
  const { wallMs, nodeCpuMs } = await runW1(client, N, `r${rep}-`, completed);
  const threads1 = await connectionThreadsCpu();
  const server1 = cpuMs(`/proc/${serverPid}/stat`);
  console.log(
    JSON.stringify({
      rep,
      load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
      w1_workflows_per_s: Math.round(N / (wallMs / 1000)),
      node_cpu_ms_per_wf: +(nodeCpuMs / N).toFixed(3),
      server_connection_threads_cpu_ms_per_wf: +(cpuBetween(threads0, threads1) / N).toFixed(3),
      server_process_cpu_ms_per_wf: +((server1 - server0) / N).toFixed(3),
      share_waiting_on_the_server: +(waitingMs / wallMs).toFixed(2),
    }),
  );
  for (const [kind, { count, ms }] of [...kinds].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(
      `  ${(ms / N).toFixed(3)} ms/wf, ${(count / N).toFixed(2)} per wf, ${(ms / count).toFixed(2)} ms each: ${kind}`,
    );
  }
}
await app.close();
await dropTables(pool, schema);
await pool.end();
await check.end();
