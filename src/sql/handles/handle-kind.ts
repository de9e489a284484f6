import type { SqlExecutor, SqlQueryResult } from '../sql-executor.js';
import type { SqlPlaceholders } from './placeholders.js';

/**
 * How a store's `transactions` option opens `ctx.transaction()`'s transactions on its server: the
 * store's placeholders, and on MySQL READ COMMITTED (as `fromMysql2()` opens them; the ORM's
 * session default there is REPEATABLE READ).
 */
export interface TransactionsDialect {
  readonly placeholders: SqlPlaceholders;
  readonly readCommitted: boolean;
}

export const POSTGRES_TRANSACTIONS: TransactionsDialect = { placeholders: 'dollar', readCommitted: false };
export const MYSQL_TRANSACTIONS: TransactionsDialect = { placeholders: 'question', readCommitted: true };

/**
 * What `typeormTransactions()` and the others return: the ORM's transactions for PostgreSQL's
 * statements, and `forDialect()`, which the MySQL store calls for its own (`?` placeholders, READ
 * COMMITTED). So one function serves both stores, from either entry.
 */
export interface OrmTransactions extends Pick<SqlExecutor, 'transaction'> {
  forDialect(dialect: TransactionsDialect): Pick<SqlExecutor, 'transaction'>;
}

export function ormTransactions(
  make: (dialect: TransactionsDialect) => Pick<SqlExecutor, 'transaction'>,
): OrmTransactions {
  return { ...make(POSTGRES_TRANSACTIONS), forDialect: make };
}

/** The `transactions` option as a store of `dialect` runs it. */
export function transactionsFor(
  transactions: Pick<SqlExecutor, 'transaction'>,
  dialect: TransactionsDialect,
): Pick<SqlExecutor, 'transaction'> {
  const orm = transactions as Partial<OrmTransactions>;
  return typeof orm.forDialect === 'function' ? orm.forDialect(dialect) : transactions;
}

/**
 * An ORM's (or query builder's) transaction handle, seen by the store: how to tell it apart from
 * the others by its shape (no library is imported: the application passes an object that its own
 * copy of the library made) and how to run the store's statements on it.
 */
export interface TransactionHandleKind {
  /** The library's name, for messages. */
  readonly library: string;
  /** Whether `value` looks like one of this library's handles (a transaction or not). */
  matches(value: object): boolean;
  /**
   * The executor whose statements run in the transaction `value` stands for. Throws a `TypeError`
   * that says what to pass instead when `value` is the library's handle but not a transaction.
   */
  executor(value: object, placeholders: SqlPlaceholders): SqlExecutor;
}

/**
 * `handle`, refusing method calls once `ended()` says its transaction is ending (committing or
 * rolling back) or over, with `message`: a statement sent then (by a callback still running after
 * its step timed out) would run on the connection back in the pool, where it commits on its own.
 * `methods`: only those are refused (the others still work); `rejects`: they refuse with a rejected
 * promise, as a driver's `query()` fails, rather than by throwing; `through`: the calls not refused
 * are made through it (`fromMysql2()`'s: one at a time, and refused once the server rolled the
 * transaction back).
 */
export function refusingAfterEnd<T extends object>(
  handle: T,
  ended: () => boolean,
  message: string,
  {
    methods,
    rejects = false,
    through,
  }: { methods?: readonly PropertyKey[]; rejects?: boolean; through?: (call: () => unknown) => unknown } = {},
): T {
  return new Proxy(handle, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (methods && !methods.includes(property)) return method.bind(target);
      return (...args: unknown[]) => {
        if (!ended()) return through ? through(() => method.apply(target, args)) : method.apply(target, args);
        const error = new Error(message);
        if (rejects) return Promise.reject(error);
        throw error;
      };
    },
  });
}

/** An executor over one transaction whose statements `run` sends; `transaction(fn)` stays in it. */
export function transactionExecutor(
  handle: unknown,
  run: (sql: string, params: readonly unknown[]) => Promise<SqlQueryResult>,
): SqlExecutor {
  const executor: SqlExecutor = {
    query: (sql, params) => run(sql, params ?? []),
    transaction: (fn) => fn(executor),
    handle,
  };
  return executor;
}

/** `{ rows, rowCount }` from what a library returned: an array of rows, or an object with rows and a count. */
export function queryResult(rows: unknown, count?: unknown, insertId?: unknown): SqlQueryResult {
  const list = Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
  const n = typeof count === 'bigint' ? Number(count) : typeof count === 'number' ? count : list.length;
  const result: SqlQueryResult = { rows: list, rowCount: n };
  // MySQL: the AUTO_INCREMENT id an INSERT allocated (the store reads a new signal's id from it).
  if (typeof insertId === 'bigint' || typeof insertId === 'number') result.insertId = Number(insertId);
  return result;
}
