import type { SqlExecutor } from '../sql-executor.js';
import {
  ormTransactions,
  queryResult,
  refusingAfterEnd,
  transactionExecutor,
  type OrmTransactions,
  type TransactionHandleKind,
} from './handle-kind.js';
import { splitStatement, type SqlPlaceholders } from './placeholders.js';

/** What the store uses of a Drizzle database or transaction (structural). */
export interface DrizzleLike {
  execute(query: unknown): PromiseLike<unknown>;
  transaction<T>(fn: (tx: DrizzleLike) => Promise<T>, config?: { isolationLevel?: 'read committed' }): Promise<T>;
  rollback?(): never;
}

/** Drizzle's `sql` builder, loaded from the application's `drizzle-orm` the first time it is needed. */
type DrizzleSql = typeof import('drizzle-orm').sql;
let drizzleSql: Promise<DrizzleSql> | undefined;
const loadSql = (): Promise<DrizzleSql> =>
  (drizzleSql ??= import('drizzle-orm').then(
    (module) => module.sql,
    (error: unknown) => {
      drizzleSql = undefined;
      throw new Error(
        `A Drizzle transaction was passed, but 'drizzle-orm' could not be loaded: ${error instanceof Error ? error.message : String(error)}`,
      );
    },
  ));

const isDrizzle = (value: object): boolean => {
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.execute === 'function' &&
    typeof candidate.transaction === 'function' &&
    typeof candidate.select === 'function' &&
    typeof candidate.insert === 'function'
  );
};

/**
 * A Drizzle transaction (`db.transaction(async (tx) => ...)`): each statement is rebuilt with
 * Drizzle's `sql` (its text pieces raw, its values as parameters) and run with `tx.execute()`.
 */
export const DRIZZLE_HANDLE: TransactionHandleKind = {
  library: 'Drizzle',
  matches: isDrizzle,
  executor(value, placeholders) {
    const tx = value as DrizzleLike;
    if (typeof tx.rollback !== 'function') {
      throw new TypeError(
        '`transaction` is a Drizzle database, not a transaction: pass the `tx` of `db.transaction(async (tx) => ...)`.',
      );
    }
    return drizzleExecutor(tx, placeholders);
  },
};

function drizzleExecutor(tx: DrizzleLike, placeholders: SqlPlaceholders, handle: unknown = tx): SqlExecutor {
  return transactionExecutor(handle, async (text, params) => {
    const sql = await loadSql();
    const { texts, values } = splitStatement(text, params, placeholders);
    const chunks = texts.flatMap((piece, i) =>
      i < values.length ? [sql.raw(piece), sql.param(values[i])] : [sql.raw(piece)],
    );
    const result = (await tx.execute(sql.join(chunks))) as unknown;
    // node-postgres: pg's result; postgres.js: an array of rows with `count`; mysql2: [rows or header, fields].
    if (Array.isArray(result)) {
      const [first] = result as unknown[];
      if (
        placeholders === 'question' &&
        result.length === 2 &&
        (Array.isArray(first) || (typeof first === 'object' && first !== null && 'affectedRows' in first))
      ) {
        const header = first as { affectedRows: number; insertId?: number };
        return Array.isArray(first) ? queryResult(first) : queryResult([], header.affectedRows, header.insertId);
      }
      return queryResult(result, (result as { count?: number }).count);
    }
    const { rows, rowCount } = result as { rows?: unknown; rowCount?: number | null };
    return queryResult(rows, rowCount ?? undefined);
  });
}

/**
 * `ctx.transaction()` through Drizzle: each transactional step runs in `db.transaction()`, and its
 * callback gets Drizzle's `tx`. Pass it as the store's `transactions` option.
 */
const DRIZZLE_ENDED =
  'This Drizzle transaction has ended (committed, rolled back or timed out); its connection is back in the pool. ' +
  'Use it only inside the callback, and stop when its signal aborts.';

export function drizzleTransactions(db: object): OrmTransactions {
  if (!db || !isDrizzle(db)) throw new TypeError('drizzleTransactions() expects a Drizzle database (`drizzle(pool)`).');
  const drizzle = db as DrizzleLike;
  return ormTransactions((dialect) => {
    const config = dialect.readCommitted ? { isolationLevel: 'read committed' as const } : undefined;
    return {
      transaction: (fn) =>
        drizzle.transaction(async (tx) => {
          // Drizzle's tx goes on sending statements after its transaction ended (on the connection,
          // back in the pool, where they commit on their own): the callback's refuses them from the
          // COMMIT or ROLLBACK on, as fromPg()'s client does.
          let ended = false;
          try {
            return await fn(
              drizzleExecutor(
                tx,
                dialect.placeholders,
                refusingAfterEnd(tx, () => ended, DRIZZLE_ENDED),
              ),
            );
          } finally {
            ended = true;
          }
        }, config),
    };
  });
}
