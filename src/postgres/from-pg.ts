import { createHash } from 'node:crypto';
import { describeDriverObject, hasMethods } from '../sql/driver-shape.js';
import { isSqlExecutor, type SqlExecutor, type SqlQueryResult } from '../sql/sql-executor.js';
import { endingStatements, runTransaction } from '../sql/sql-transaction.js';
import { refusingAfterEnd } from '../sql/handles/handle-kind.js';
import { pgListen } from './pg-listen-connection.js';
import type { PgClientLike, PgPoolLike, PgQueryConfigLike, PgResultLike } from './pg-like.js';

export type {
  PgClientLike,
  PgNotificationLike,
  PgPoolClientLike,
  PgPoolLike,
  PgQueryConfigLike,
  PgResultLike,
} from './pg-like.js';

const resultOf = (result: PgResultLike | PgResultLike[]): SqlQueryResult => {
  // A parameterless text with several statements resolves to one result per statement.
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return { rows: last?.rows ?? [], rowCount: last?.rowCount ?? 0 };
};

const statementNames = new Map<string, string>();

/**
 * A statement with parameters as a named (prepared) query: the store's statements are a fixed set
 * per schema, so each connection parses and plans each one once instead of on every call, which is
 * most of the server's work for the small writes of the hot path. Statements without parameters
 * (DDL, several statements in one text) run as plain text.
 *
 * The name is a hash of the text, not a counter: `pg` refuses a name a connection already prepared
 * with another text, and the application's pool may be shared with another copy of this module
 * (its ESM and CJS builds both loaded, or two versions), whose counter would hand out the same
 * names for other statements.
 */
function prepared(sql: string, params: readonly unknown[] | undefined): string | PgQueryConfigLike {
  if (!params || params.length === 0) return sql;
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `nest_workflows_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
    statementNames.set(sql, name);
  }
  return { name, text: sql, values: params as unknown[] };
}

/**
 * A `SqlExecutor` over a `pg` Pool: single statements on the pool, transactions on a client it
 * checks out (and gives back), and `listen()` on one client it holds while any subscription lasts,
 * shared by all of them (`pgListen()`). The application owns the pool and ends it; the store never
 * does.
 *
 * @example new PostgresWorkflowStore({ executor: fromPg(new Pool({ connectionString })) })
 */
export function fromPg(pool: PgPoolLike): SqlExecutor {
  assertPool(pool);
  const executor: SqlExecutor = {
    target: poolTarget(pool),
    async query(sql, params) {
      return resultOf(await pool.query(prepared(sql, params)));
    },
    async transaction(fn) {
      const client = await pool.connect();
      const ended = { done: false };
      let lost: Error | undefined;
      // Between statements no query is active to receive a connection error: without a listener
      // the client would emit it unhandled and crash the process.
      const onError = (error: Error) => {
        lost = error;
      };
      client.on('error', onError);
      return runTransaction(
        {
          begin: async () => void (await client.query('BEGIN')),
          // Queued behind the COMMIT or ROLLBACK, a later statement would run with no transaction.
          ...endingStatements(ended, (sql) => client.query(sql)),
          end: (broken) => {
            ended.done = true;
            client.removeListener('error', onError);
            // A connection that failed must not be lent again: the pool destroys it.
            client.release(broken ?? lost);
          },
        },
        () => fn(fromPgClient(guard(client, ended))),
      );
    },
    listen: pgListen(pool),
  };
  return executor;
}

/**
 * A `SqlExecutor` over one `pg` client, for statements in a transaction the application runs on it
 * (`start(..., { transaction: client })`): every statement goes through `client`, and
 * `transaction(fn)` runs `fn` in the application's transaction rather than opening another. The
 * application begins, commits or rolls back; this never does.
 */
export function fromPgClient(client: PgClientLike): SqlExecutor {
  if (!client || typeof (client as Partial<PgClientLike>).query !== 'function') {
    throw new TypeError(
      `Expected a pg client in a transaction (a PoolClient from \`await pool.connect()\` after \`BEGIN\`), got ${describe(client)}.`,
    );
  }
  const executor: SqlExecutor = {
    async query(sql, params) {
      return resultOf(await client.query(prepared(sql, params)));
    },
    transaction: (fn) => fn(executor),
    handle: client,
  };
  return executor;
}

/**
 * The client a transaction of `fromPg()` hands out (to `ctx.transaction()` callbacks among
 * others), refusing statements once that transaction ended: the client is back in the pool then,
 * and a statement sent by code that kept it (a callback still running after its step timed out)
 * would run outside any transaction, on a connection someone else may hold.
 */
function guard<C extends PgClientLike>(client: C, ended: { done: boolean }): C {
  return refusingAfterEnd(client, () => ended.done, ENDED, { methods: ['query'], rejects: true });
}

const ENDED =
  'This pg client belonged to a transaction that has ended (committed, rolled back or timed out); it is back in the pool. ' +
  'Use it only inside the callback, and stop when its signal aborts.';

/**
 * The executor for an application's `transaction` argument (`start()` / `signal()` with
 * `{ transaction }`): a `SqlExecutor`, or the `pg` client it ran `BEGIN` on. A Pool is refused:
 * its statements would each run in a transaction of their own.
 */
export function pgTransactionExecutor(transaction: unknown, store: string): SqlExecutor {
  if (isSqlExecutor(transaction)) return transaction;
  if (hasMethods(transaction, 'beginTransaction')) {
    // A mysql2 connection: checked before anything is sent, since pg's query config means nothing to it.
    throw new TypeError(
      `${store}: \`transaction\` is a mysql2 connection, not on PostgreSQL. Pass a transaction on the store's database.`,
    );
  }
  if (typeof transaction === 'object' && transaction !== null && 'totalCount' in transaction) {
    throw new TypeError(
      `${store}: \`transaction\` is a pg Pool. Pass the client you ran BEGIN on (\`const client = await pool.connect()\`), ` +
        'so the statements run in your transaction.',
    );
  }
  return fromPgClient(transaction as PgClientLike);
}

function assertPool(pool: unknown): asserts pool is PgPoolLike {
  const candidate = pool as Partial<PgPoolLike> & Record<string, unknown>;
  if (!hasMethods(pool, 'query', 'connect')) {
    throw new TypeError(
      `fromPg() expects a pg Pool (\`new Pool({ connectionString })\` from 'pg'), got ${describe(pool)}.`,
    );
  }
  if (hasMethods(pool, 'release')) {
    throw new TypeError(
      'fromPg() expects a pg Pool, got a client checked out of one (it has release()). Pass the Pool itself: ' +
        'the store checks out its own connections (transactions, LISTEN). For a transaction of yours, pass the client ' +
        'as `{ transaction: client }` to start() or signal().',
    );
  }
  if ('connection' in candidate && !('totalCount' in candidate)) {
    throw new TypeError(
      'fromPg() expects a pg Pool, got a single pg Client. The store needs several connections (its transactions ' +
        'and a LISTEN connection): create a `new Pool(...)` and pass that.',
    );
  }
}

/**
 * Where a pool connects, as `host:port database db`, for messages: from its options or connection
 * string (never the password), else what `pg` falls back to (PGHOST, PGPORT, PGDATABASE, localhost).
 */
export function poolTarget(pool: PgPoolLike): string {
  const options = pool.options ?? {};
  let host = typeof options.host === 'string' ? options.host : undefined;
  let port = typeof options.port === 'number' || typeof options.port === 'string' ? String(options.port) : undefined;
  let database = typeof options.database === 'string' ? options.database : undefined;
  if (typeof options.connectionString === 'string') {
    try {
      const url = new URL(options.connectionString);
      host ??= decodeURIComponent(url.hostname) || url.searchParams.get('host') || undefined;
      port ??= url.port || undefined;
      database ??= decodeURIComponent(url.pathname.replace(/^\//, '')) || undefined;
    } catch {
      // Not a URL (a keyword/value string): fall back to the defaults below.
    }
  }
  host ??= process.env.PGHOST || 'localhost';
  port ??= process.env.PGPORT || '5432';
  database ??= process.env.PGDATABASE;
  return `${host}:${port}${database ? ` database ${database}` : ''}`;
}

function describe(value: unknown): string {
  return describeDriverObject(value, ['query', 'connect']);
}
