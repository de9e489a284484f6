/** What a statement returns: its rows (column name to value, as the driver decoded it) and how many rows it touched. */
export interface SqlQueryResult {
  rows: Record<string, unknown>[];
  /** Rows returned, or changed by an `INSERT` / `UPDATE` / `DELETE`; 0 when the driver doesn't say. */
  rowCount: number;
  /** MySQL: the `AUTO_INCREMENT` id an `INSERT` allocated (0 when it inserted nothing). */
  insertId?: number;
  /**
   * MySQL, optional: the server's info message for the statement (`Records: 3  Duplicates: 0
   * Warnings: 0` after an `INSERT ... SELECT`), whose first number is the rows the `SELECT` gave.
   */
  info?: string;
}

/** How `query()` may run one statement. */
export interface SqlQueryOptions {
  /**
   * The store sends this very text again and again (its hot path: claims, write batches, the
   * wake-up poll), on a server where preparing it is known to work: the executor may prepare it
   * once per connection and send only the parameters after. A hint, which an executor may ignore.
   */
  repeated?: boolean;
  /**
   * The statement writes nothing a transaction would commit (a `ROLLBACK`, a session variable set
   * back): an executor that refuses a transaction's statements once the server rolled it back
   * (`fromMysql2()`'s, after a deadlock) still sends it. Default `false`.
   */
  writesNothing?: boolean;
}

/** How `transaction()` runs one transaction. */
export interface SqlTransactionOptions {
  /**
   * `'session'`: at the session's own isolation level, which the executor need not set (on MySQL
   * that saves a statement per transaction). Only for transactions whose every read is a locking
   * one and whose every write goes by primary key, so that the level changes nothing they see or
   * lock for long. Default `'read-committed'`.
   */
  isolation?: 'read-committed' | 'session';
  /**
   * `true` for the store's own short transactions, never for one whose connection other code
   * gets: the executor may run it on a connection it keeps between such transactions, its
   * session set once (`fromMysql2()`: READ COMMITTED and autocommit off, which saves `SET
   * TRANSACTION` and `START TRANSACTION`). Default `false`.
   */
  held?: boolean;
}

/**
 * How a SQL store reaches its database, with no driver in sight: `fromPg(pool)` builds one over a
 * `pg` Pool (the store never imports `pg`, not even its types), and an application may write its
 * own over another client or ORM. The store passes every value as a parameter and builds statement
 * text only from its own constants and the validated, quoted schema name.
 */
export interface SqlExecutor {
  /** Optional: where it connects (`host:port database db`), named in startup errors. */
  readonly target?: string;

  /**
   * Runs one statement with positional parameters (`$1`... on PostgreSQL). Without parameters the
   * text may hold several statements separated by `;` (the migrations run that way); the result is
   * the last statement's.
   */
  query(sql: string, params?: readonly unknown[], options?: SqlQueryOptions): Promise<SqlQueryResult>;

  /**
   * Runs `fn` in one transaction on one connection (READ COMMITTED, the database's default): commits
   * when it resolves, rolls back when it throws, and releases the connection either way. Every
   * statement of the transaction goes through the `tx` it is given. Calling `transaction()` on `tx`
   * runs `fn` in the same transaction (no nesting).
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: SqlTransactionOptions): Promise<T>;

  /**
   * Optional: gives back what the executor keeps between transactions (`fromMysql2()`'s held
   * connection). The store calls it when it closes; the executor can still be used after.
   */
  close?(): void;

  /**
   * Optional, on the executor a transaction hands `fn`: the driver's (or the ORM's) own handle on
   * that transaction, which `ctx.transaction()` passes to the workflow's callback so its statements
   * run in the transaction that records the step. `fromPg()` gives the `pg` client.
   */
  readonly handle?: unknown;

  /**
   * Optional (PostgreSQL): holds a connection that `LISTEN`s on `channel` and calls `onNotify` with
   * each notification's payload of that channel. `onError` is called once when that connection
   * fails or ends; the subscription is then over (the caller subscribes again). Resolves, once
   * listening, to a function that stops (`UNLISTEN`) and gives the connection back. Subscriptions
   * may share one connection (`fromPg()`'s do): the store subscribes to its ends' channel only while
   * a `handle.result()` waits.
   */
  listen?(
    channel: string,
    onNotify: (payload: string) => void,
    onError?: (error: Error) => void,
  ): Promise<() => Promise<void>>;
}

/** Whether `value` has a `SqlExecutor`'s methods (what `fromPg()` and `fromMysql2()` return, or one of yours). */
export function isSqlExecutor(value: unknown): value is SqlExecutor {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<SqlExecutor>;
  return typeof candidate.query === 'function' && typeof candidate.transaction === 'function';
}

/**
 * A SQL store's `executor` option, checked: a `TypeError` that names the store and the factory
 * to wrap the driver's pool with (`hint`, when the value looks like a raw pool) otherwise.
 */
export function requireExecutor(executor: unknown, store: string, factory: string, hint: string): SqlExecutor {
  if (isSqlExecutor(executor)) return executor;
  const raw = executor as { getConnection?: unknown; connect?: unknown } | undefined;
  const pool = typeof raw?.connect === 'function' || typeof raw?.getConnection === 'function';
  throw new TypeError(`${store}: \`executor\` must be a SqlExecutor such as ${factory}.${pool ? ` ${hint}` : ''}`);
}
