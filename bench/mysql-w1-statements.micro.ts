// The CPU of each of MariaDB W1's store calls, Node's and the server's, one kind at a time:
// `node --import ./scripts/register-ts.mjs bench/mysql-w1-statements.micro.ts` (GROUPS, default 300;
// ROUNDS, default 3, the first a warm-up). It creates GROUPS x 10 instances, then per group makes
// the calls a W1 cycle of ten makes, as the worker makes them (the store's own statements): a claim
// of 10, two batches of 10 step writes, a batch of 10 last-step-and-complete writes; beside them the
// wake-up poll's read and the round-trip floor (`DO 0`). Around each call: this process's CPU
// (process.cpuUsage) and the CPU of the server threads serving the pool's connections
// (/proc/<server>/task/<tid>/schedstat, nanoseconds). Prints ms per call and per workflow by kind.
// For MariaDB on this machine (its pid file and /proc readable).
import mysql from 'mysql2/promise';
import { readFileSync } from 'node:fs';
import { MySqlWorkflowStore, fromMysql2, type SqlExecutor } from '../src/mysql/index.js';
import { createMysqlPool, dropTables, mysqlConnection } from '../test/support/mysql.js';
import { mysqlServerPid } from './fixtures/server-cpu.js';

const GROUPS = Number(process.env.GROUPS ?? 300);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const pool = createMysqlPool({ connectionLimit: 4 });
const check = await mysql.createConnection(mysqlConnection);
const serverPid = await mysqlServerPid((sql) => check.query(sql));
if (serverPid === null)
  throw new Error('mysql-w1-statements: the server must run on this machine, its pid file and /proc readable.');

/** The server threads of the pool's connections, found once they all exist. */
let tids: number[] = [];
async function findThreads(): Promise<void> {
  const connections = (
    pool as unknown as { pool: { _allConnections: { toArray(): Array<{ threadId: number }> } } }
  ).pool._allConnections.toArray();
  const [rows] = await check.query('SELECT TID FROM information_schema.PROCESSLIST WHERE ID IN (?)', [
    connections.map((c) => c.threadId),
  ]);
  tids = (rows as Array<{ TID: number }>).map(({ TID }) => TID);
}
function serverNs(): number {
  let sum = 0;
  for (const tid of tids) {
    try {
      sum += Number(readFileSync(`/proc/${serverPid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A connection closed meanwhile: its thread's time is lost to this sample.
    }
  }
  return sum;
}

/** STATEMENTS=1: the server's CPU by statement instead of by call (Node's then includes the reads of /proc). */
const byStatement = process.env.STATEMENTS === '1';
const statementKind = (sql: string) =>
  sql
    .replace(/`[^`]*`/g, 'T')
    .replace(/\s+/g, ' ')
    .slice(0, 70);
function measured(executor: SqlExecutor): SqlExecutor {
  const query: SqlExecutor['query'] = async (sql, params, options) => {
    const server0 = serverNs();
    try {
      return await executor.query(sql, params, options);
    } finally {
      const entry = (totals[statementKind(sql)] ??= { node: 0, server: 0, n: 0, perWorkflow: 0 });
      entry.server += (serverNs() - server0) / 1e6;
      entry.n++;
    }
  };
  return {
    query,
    async transaction(fn, options) {
      let ended = 0;
      const result = await executor.transaction(async (tx) => {
        const value = await fn(measured(tx));
        ended = serverNs();
        return value;
      }, options);
      const entry = (totals['COMMIT'] ??= { node: 0, server: 0, n: 0, perWorkflow: 0 });
      entry.server += (serverNs() - ended) / 1e6;
      entry.n++;
      return result;
    },
    close: () => executor.close?.(),
  };
}

type Totals = Record<string, { node: number; server: number; n: number; perWorkflow: number }>;
let totals: Totals = {};
async function timed<T>(kind: string, perWorkflow: number, fn: () => Promise<T>): Promise<T> {
  // Reading /proc costs this process: outside the span its CPU is taken over.
  const server0 = byStatement ? 0 : serverNs();
  const node0 = process.cpuUsage();
  const result = await fn();
  const node = process.cpuUsage(node0);
  const server1 = byStatement ? 0 : serverNs();
  const entry = (totals[kind] ??= { node: 0, server: 0, n: 0, perWorkflow });
  entry.node += (node.user + node.system) / 1000;
  entry.server += (server1 - server0) / 1e6;
  entry.n++;
  return result;
}

const workflows = [{ name: 'bench.three-steps', version: 1 }];
const entry = (name: string, i: number, step: number, now: number) => ({
  name,
  kind: 'step' as const,
  state: 'completed' as const,
  value: { i, step },
  attempts: 1,
  createdAt: now,
  updatedAt: now,
});

for (let round = 0; round < ROUNDS; round++) {
  const schema = `bstmt_${Date.now().toString(36)}_${round}`;
  const executor = byStatement ? measured(fromMysql2(pool)) : fromMysql2(pool);
  const store = new MySqlWorkflowStore({ executor, schema });
  await store.init();
  const now = Date.now();
  for (let g = 0; g < GROUPS; g++) {
    await Promise.all(
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
    );
  }
  await findThreads();
  totals = {};
  const instances = `\`${schema}_instances\``;
  for (let g = 0; g < GROUPS; g++) {
    const token = `t${g}`;
    const claimed = await timed('claim 10 (+ last signal id)', 1 / 10, () =>
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
    if (claimed.instances.length !== 10) throw new Error(`claimed ${claimed.instances.length}`);
    for (const step of [1, 2]) {
      await timed('write batch of 10 steps', 2 / 10, () =>
        Promise.all(
          claimed.instances.map((instance, k) =>
            store.write(instance.id, token, { now, entries: [entry(`step-${step}`, k, step, now)] }),
          ),
        ),
      );
    }
    await timed('write batch of 10 last steps + completed', 1 / 10, () =>
      Promise.all(
        claimed.instances.map((instance, k) =>
          store.write(instance.id, token, {
            now,
            entries: [entry('step-3', k, 3, now)],
            status: 'completed',
            output: [1, 2, 3].map((step) => ({ i: k, step })),
            release: { wakeAt: null, waits: [], signalCursor: 0 },
          } as never),
        ),
      ),
    );
    await timed('wake-up poll read (per read)', 0, () =>
      executor.query(
        `SELECT id, wake_at FROM ${instances} FORCE INDEX (instances_wake) WHERE lease_token IS NULL AND wake_at <= ? ORDER BY wake_at DESC, id DESC LIMIT 1`,
        [Date.now()],
      ),
    );
    await timed('DO 0 (round-trip floor, per statement)', 0, () => executor.query('DO 0'));
  }
  const [rows] = await check.query(`SELECT COUNT(*) AS n FROM ${instances} WHERE status = 'completed'`);
  const completed = Number((rows as Array<{ n: number }>)[0]!.n);
  if (completed !== GROUPS * 10) throw new Error(`completed ${completed}`);
  await store.close();
  await dropTables(pool, schema);
  if (round === 0) continue;
  const out: Record<string, unknown> = { round, load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]) };
  let nodeWf = 0;
  let serverWf = 0;
  for (const [kind, { node, server, n, perWorkflow }] of Object.entries(totals)) {
    out[kind] = { node_ms: +(node / n).toFixed(3), server_ms: +(server / n).toFixed(3) };
    nodeWf += (node / n) * perWorkflow;
    serverWf += (server / n) * perWorkflow;
  }
  out.cycle_node_ms_per_wf = +nodeWf.toFixed(3);
  out.cycle_server_ms_per_wf = +serverWf.toFixed(3);
  console.log(JSON.stringify(out));
}
await pool.end();
await check.end();
