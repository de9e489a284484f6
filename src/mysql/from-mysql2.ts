import { isSqlExecutor, type SqlExecutor, type SqlQueryOptions, type SqlQueryResult } from '../sql/sql-executor.js';
import { describeDriverObject, hasMethods } from '../sql/driver-shape.js';
import { endingStatements, runTransaction } from '../sql/sql-transaction.js';
import { ormHandleExecutor } from '../sql/handles/handle-executor.js';
import { refusingAfterEnd } from '../sql/handles/handle-kind.js';
import { HeldSession } from './held-session.js';
import { mysqlPoolTarget } from './mysql-pool-target.js';
import { outsideTransaction } from './mysql-session.js';
import { PreparedTexts, unpreparable } from './prepared-texts.js';
import { ServerRollbackWatch, serverInTransaction } from './server-rollback-watch.js';

/** What `mysql2/promise` resolves a query to: `[rows, fields]`, or `[ResultSetHeader, undefined]`. */
export type Mysql2QueryResultLike = [unknown, unknown];

/** The `mysql2/promise` connection methods the store uses (`Connection` and `PoolConnection` have them). */
export interface Mysql2ConnectionLike {
  query(sql: string, values?: unknown): Promise<Mysql2QueryResultLike>;
}

/** A connection checked out of a `mysql2/promise` pool. */
export interface Mysql2PoolConnectionLike extends Mysql2ConnectionLike {
  release(): void;
  destroy?(): void;
}

/** The `mysql2/promise` `Pool` methods the store uses. */
export interface Mysql2PoolLike extends Mysql2ConnectionLike {
  getConnection(): Promise<Mysql2PoolConnectionLike>;
}

interface ResultHeader {
  affectedRows?: number;
  insertId?: number;
  info?: string;
}

const NO_PARAMS: readonly unknown[] = [];

/** How many statement texts `fromMysql2()` prepares at most, by default. */
const DEFAULT_PREPARED_STATEMENTS = 64;

/** `fromMysql2()`'s options. */
export interface FromMysql2Options {
  /**
   * At most this many of the store's statement texts are prepared, each on every pool connection
   * it runs on (they count towards the server's `max_prepared_stmt_count`, 16,382 by default):
   * only those the store sends again and again on its hot path (claims, write batches, the
   * wake-up poll), and only on MariaDB. A prepared statement is parsed once per connection
   * instead of on every call. Default 64; 0: none (every statement goes as text).
   */
  preparedStatements?: number;
}

function resultOf(result: unknown): SqlQueryResult {
  if (Array.isArray(result)) {
    if (result.length > 0 && Array.isArray(result[0])) {
      // Several results: a compound statement's (MariaDB: its SELECTs' rows, then the status of
      // the whole), or a text of several statements' (a pool with `multipleStatements`). The rows
      // are the last SELECT's; without one, the last status.
      const sets = result.filter((part): part is Record<string, unknown>[] => Array.isArray(part));
      const last = sets.length > 0 ? sets[sets.length - 1]! : result[result.length - 1];
      return resultOf(last);
    }
    return { rows: result as Record<string, unknown>[], rowCount: result.length };
  }
  const header = (result ?? {}) as ResultHeader;
  return { rows: [], rowCount: header.affectedRows ?? 0, insertId: header.insertId ?? 0, info: header.info ?? '' };
}

type Mysql2Callback = (error: Error | null, result?: unknown) => void;

/** mysql2's callback API, which its promise API wraps (a `Pool` or a `Connection`). */
interface Mysql2CallbackLike {
  query(sql: string, values: unknown, callback: Mysql2Callback): unknown;
  /** Prepares `sql` on the connection it runs on (once: mysql2 keeps it there), then executes it. */
  execute?(sql: string, values: unknown, callback: Mysql2Callback): unknown;
}

type Send = (sql: string, params: readonly unknown[], options?: SqlQueryOptions) => Promise<SqlQueryResult>;

/**
 * How the executor sends a statement through `target`: through the mysql2 callback object the
 * promise wrapper holds (`pool.pool`, `connection.connection`) when it has one, the same statement
 * on the same pool or connection without the wrapper's per-call work (a stack trace captured for
 * every statement, unless the pool was created with `trace: false`, and the `[rows, fields]`
 * array); otherwise through `target.query()`.
 */
function sender(target: Mysql2ConnectionLike, core: unknown, prepared: PreparedTexts | null): Send {
  if (typeof core === 'object' && core !== null && typeof (core as Mysql2CallbackLike).query === 'function') {
    const callbacks = core as Mysql2CallbackLike;
    const send = (method: 'query' | 'execute', sql: string, params: readonly unknown[]) =>
      new Promise<SqlQueryResult>((resolve, reject) => {
        callbacks[method]!(sql, params, (error, result) => (error ? reject(error) : resolve(resultOf(result))));
      });
    if (prepared === null || typeof callbacks.execute !== 'function')
      return (sql, params) => send('query', sql, params);
    return (sql, params, options) => {
      if (!options?.repeated || params.length === 0 || !prepared.take(sql)) return send('query', sql, params);
      return send('execute', sql, params).catch((error: unknown) => {
        if (!unpreparable(error)) throw error;
        prepared.refuse(sql);
        return send('query', sql, params);
      });
    };
  }
  return async (sql, params) => resultOf((await target.query(sql, params))[0]);
}

/**
 * A `SqlExecutor` over a `mysql2/promise` pool (`mysql.createPool(...)` from `'mysql2/promise'`, or
 * `pool.promise()` of a callback pool): single statements on the pool, transactions on a
 * connection it checks out (READ COMMITTED, set for that transaction only, unless asked to keep the
 * session's level) and gives back; the store's own short transactions on one connection it keeps
 * between them while it is busy (see `HeldSession`), given back when the store closes. The
 * application owns the pool and ends it; the store never does. Statements use `?` parameters,
 * which mysql2 escapes; the pool must keep mysql2's default `FOUND_ROWS` flag (the store reads
 * "rows matched" from its conditional updates).
 *
 * @example new MySqlWorkflowStore({ executor: fromMysql2(mysql.createPool({ uri, connectionLimit: 10 })) })
 */
export function fromMysql2(pool: Mysql2PoolLike, options: FromMysql2Options = {}): SqlExecutor {
  assertPool(pool);
  const maxPrepared = preparedStatementsOption(options);
  const held = new HeldSession<Mysql2PoolConnectionLike>(poolSize(pool) >= HeldSession.MIN_POOL);
  const send = sender(pool, (pool as { pool?: unknown }).pool, maxPrepared > 0 ? new PreparedTexts(maxPrepared) : null);
  return {
    target: mysqlPoolTarget(pool),
    query: (sql, params, queryOptions) => send(sql, params ?? NO_PARAMS, queryOptions),
    async transaction(fn, options) {
      const lane = options?.held ? held.take() : null;
      if (lane) {
        const tx = fromMysql2Connection(lane.connection);
        // Autocommit is off on the held connection: its first statement begins the transaction.
        return runTransaction(
          {
            begin: async () => undefined,
            commit: async () => void (await tx.query('COMMIT')),
            rollback: async () => void (await tx.query('ROLLBACK')),
            end: (broken) => held.give(lane, broken !== undefined),
          },
          () => fn(tx),
        );
      }
      const connection = await pool.getConnection();
      const ended = { done: false };
      // InnoDB may roll the whole transaction back under a statement (a deadlock): from then on
      // the callback's statements and the store's are refused rather than committed one by one.
      // The store's go on the connection itself; the callback gets it guarded.
      const watch = new ServerRollbackWatch(() => serverInTransaction(connection));
      const tx = watch.executor({ ...fromMysql2Connection(connection), handle: guard(connection, ended, watch) });
      return runTransaction(
        {
          // For this transaction only: the application's sessions keep their own level.
          begin: async () => {
            if (options?.isolation !== 'session') await tx.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
            await tx.query('START TRANSACTION');
          },
          // Autocommitted on a connection back in the pool, a later statement would commit alone.
          // The COMMIT is refused once the server rolled the transaction back; the ROLLBACK is not.
          ...endingStatements(ended, (sql) => tx.query(sql, NO_PARAMS, { writesNothing: sql === 'ROLLBACK' })),
          end: (broken) => {
            ended.done = true;
            if (broken && connection.destroy) connection.destroy();
            else if (broken || !(options?.held && held.adopt(connection))) connection.release();
          },
        },
        () => fn(tx),
      );
    },
    close: () => held.close(),
  };
}

/**
 * A `SqlExecutor` over one `mysql2/promise` connection, for statements in a transaction the
 * application runs on it (`start(..., { transaction: connection })`): every statement goes through
 * `connection`, and `transaction(fn)` runs `fn` in the application's transaction rather than
 * opening another. The application begins, commits or rolls back; this never does.
 */
export function fromMysql2Connection(connection: Mysql2ConnectionLike): SqlExecutor {
  if (!connection || typeof (connection as Partial<Mysql2ConnectionLike>).query !== 'function') {
    throw new TypeError(
      `Expected a mysql2/promise connection in a transaction (\`await pool.getConnection()\` after \`beginTransaction()\`), got ${describe(connection)}.`,
    );
  }
  const send = sender(connection, (connection as { connection?: unknown }).connection, null);
  const executor: SqlExecutor = {
    query: (sql, params) => send(sql, params ?? NO_PARAMS),
    transaction: (fn) => fn(executor),
    handle: connection,
  };
  return executor;
}

/**
 * The connection a transaction of `fromMysql2()` hands out (to `ctx.transaction()` callbacks among
 * others), refusing statements (`query()`, `execute()`) once that transaction ends, and sending
 * them through `watch` (refused once the server rolled the transaction back). The store's own
 * statements don't go through it: the COMMIT and ROLLBACK are sent once it refuses.
 */
function guard<C extends Mysql2ConnectionLike>(client: C, ended: { done: boolean }, watch: ServerRollbackWatch): C {
  return refusingAfterEnd(client, () => ended.done, ENDED, {
    methods: ['query', 'execute'],
    rejects: true,
    through: (call) => watch.run(call),
  });
}

const ENDED =
  'This mysql2 connection belonged to a transaction that has ended (committed, rolled back or timed out); it is back in the pool. ' +
  'Use it only inside the callback, and stop when its signal aborts.';

/**
 * The executor for an application's `transaction` argument (`start()` / `signal()` with
 * `{ transaction }`): a `SqlExecutor`, or the mysql2 connection it began a transaction on, checked
 * to be in one (the server says so in every reply) so the store's rows commit with the
 * application's. A pool is refused: its statements would each commit on their own.
 */
export async function mysqlTransactionExecutor(transaction: unknown, store: string): Promise<SqlExecutor> {
  // An ORM's transaction handle (Kysely, Drizzle, TypeORM, ...), checked by its adapter to be a
  // transaction; first, since a TypeORM EntityManager also looks like a SqlExecutor.
  const orm = ormHandleExecutor(transaction, 'question');
  if (orm) return orm;
  if (isSqlExecutor(transaction)) {
    await assertExecutorInTransaction(transaction, store);
    return transaction;
  }
  if (typeof transaction === 'object' && transaction !== null && 'getConnection' in transaction) {
    throw new TypeError(
      `${store}: \`transaction\` is a mysql2 pool. Pass the connection you began the transaction on ` +
        '(`const connection = await pool.getConnection(); await connection.beginTransaction()`), so the statements run in your transaction.',
    );
  }
  if (hasMethods(transaction, 'escapeIdentifier')) {
    // A pg client: refused before the check below, whose MySQL statement would abort its transaction.
    throw new TypeError(
      `${store}: \`transaction\` is a pg client, not on MySQL or MariaDB. Pass a transaction on the store's database.`,
    );
  }
  const executor = fromMysql2Connection(transaction as Mysql2ConnectionLike);
  if ((await serverInTransaction(transaction as Mysql2ConnectionLike)) === false) {
    throw new TypeError(
      `${store}: \`transaction\` is a mysql2 connection that is not in a transaction: its statements would commit at once. ` +
        'Call `await connection.beginTransaction()` first, and pass it before you commit.',
    );
  }
  return executor;
}

/**
 * Refuses a `SqlExecutor` whose statements are not in a transaction (one over a pool, say): the
 * store's statements would then commit each on their own, whatever the application's transaction
 * does. A savepoint tells (see `outsideTransaction()`).
 */
async function assertExecutorInTransaction(executor: SqlExecutor, store: string): Promise<void> {
  const outside = await outsideTransaction(executor);
  if (outside) {
    throw new TypeError(
      `${store}: \`transaction\` is a SqlExecutor that is not in a transaction: its statements would commit at once. ` +
        "Pass the executor your transaction's statements go through (the `tx` of its `transaction(fn)`), before the commit.",
      { cause: outside },
    );
  }
}

/**
 * The isolation level of `executor`'s session (`READ-COMMITTED`...): MySQL 8 names the variable
 * `transaction_isolation`, MariaDB before 11.1 only `tx_isolation`.
 */
export async function sessionIsolation(executor: SqlExecutor): Promise<string> {
  try {
    const { rows } = await executor.query('SELECT @@SESSION.transaction_isolation AS level');
    return String(rows[0]?.level ?? '');
  } catch {
    const { rows } = await executor.query('SELECT @@SESSION.tx_isolation AS level');
    return String(rows[0]?.level ?? '');
  }
}

function preparedStatementsOption({
  preparedStatements = DEFAULT_PREPARED_STATEMENTS,
  ...rest
}: FromMysql2Options): number {
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new TypeError(
      `fromMysql2(): unknown option ${unknown.map((key) => `"${key}"`).join(', ')}; the options are "preparedStatements".`,
    );
  if (!Number.isSafeInteger(preparedStatements) || preparedStatements < 0) {
    throw new TypeError(
      `fromMysql2(): \`preparedStatements\` must be a whole number of 0 or more (0: none prepared), got ${String(preparedStatements)}.`,
    );
  }
  return preparedStatements;
}

/** The pool's `connectionLimit` (mysql2 keeps it in `pool.pool.config`), or 0 when it doesn't say. */
function poolSize(pool: Mysql2PoolLike): number {
  const limit = (pool as { pool?: { config?: { connectionLimit?: unknown } } }).pool?.config?.connectionLimit;
  return typeof limit === 'number' ? limit : 0;
}

function assertPool(pool: unknown): asserts pool is Mysql2PoolLike {
  const candidate = pool as Partial<Mysql2PoolLike> & Record<string, unknown>;
  if (!hasMethods(pool, 'query', 'getConnection')) {
    throw new TypeError(
      `fromMysql2() expects a mysql2/promise pool (\`mysql.createPool(...)\` from 'mysql2/promise'), got ${describe(pool)}.`,
    );
  }
  if (hasMethods(pool, 'release')) {
    throw new TypeError(
      'fromMysql2() expects a mysql2 pool, got a connection checked out of one (it has release()). Pass the pool itself: ' +
        'the store checks out its own connections. For a transaction of yours, pass the connection as `{ transaction: connection }`.',
    );
  }
  if (typeof candidate.promise === 'function' && !('pool' in candidate)) {
    throw new TypeError(
      "fromMysql2() expects mysql2's promise API: pass `pool.promise()`, or create the pool from 'mysql2/promise'.",
    );
  }
  const flags = (candidate.pool as { config?: { connectionConfig?: { flags?: unknown } } } | undefined)?.config
    ?.connectionConfig?.flags;
  const removed = typeof flags === 'string' ? flags.split(/\s*,\s*/) : Array.isArray(flags) ? flags : [];
  if (removed.includes('-FOUND_ROWS')) {
    throw new TypeError(
      "fromMysql2(): the pool's connections lack the FOUND_ROWS flag (mysql2 sets it unless `flags: '-FOUND_ROWS'`). " +
        'The store reads the rows its conditional updates matched: keep the default flags.',
    );
  }
}

function describe(value: unknown): string {
  return describeDriverObject(value, ['query', 'getConnection']);
}
