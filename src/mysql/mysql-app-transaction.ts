import { mysqlTransactionExecutor } from './from-mysql2.js';
import { databaseError } from './mysql-database-error.js';
import { handleLibrary } from '../sql/handles/handle-executor.js';
import { queueOnHandle } from '../sql/transaction-handle-queue.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** MySQL's "table doesn't exist" (ER_NO_SUCH_TABLE) and "unknown database" (ER_BAD_DB_ERROR). */
const NO_SUCH_TABLE = 1146;
const BAD_DATABASE = 1049;

/**
 * A `TypeError` naming the cause when `error` shows that the store's statements, run on the
 * application's transaction handle (`start()` / `signal()` with `{ transaction }`) or on the
 * `transactions` option's ORM, reached another database than the store's: one without the store's
 * tables (MySQL's 1146 or 1049), or one that is not MySQL at all (a PostgreSQL handle answers with
 * a five-character SQLSTATE such as `42601`). `null` for any other failure.
 */
export function explainOtherMysqlDatabase(
  error: unknown,
  store: string,
  schema: string,
  library: string,
): TypeError | null {
  const found = databaseError(error);
  if (!found) return null;
  if (found.errno === NO_SUCH_TABLE || found.errno === BAD_DATABASE) {
    return new TypeError(
      `${store}: the ${library} transaction reaches a database without the store's tables "${schema}_*" (${found.message}). ` +
        "Pass a transaction on the store's database, the one its executor connects to (or migrate the store there).",
    );
  }
  if (found.sqlState !== null) {
    return new TypeError(
      `${store}: the ${library} transaction is not on MySQL or MariaDB (${found.message}). Pass a transaction on the store's database.`,
    );
  }
  return null;
}

const SAVEPOINT = 'nest_workflows_store';

/**
 * `fn`'s statements in a savepoint of the application's transaction: when one fails, the ones
 * before it are undone too (InnoDB undoes only the failed statement), so a start or signal that
 * rejects leaves nothing of itself (a stored signal whose wake-ups failed, say) to commit with the
 * application's rows, and the application's transaction stays usable. A deadlock rolled the whole
 * transaction back already: then the savepoint is gone, and the rollback to it fails quietly.
 */
export async function inSavepoint<T>(executor: SqlExecutor, fn: (executor: SqlExecutor) => Promise<T>): Promise<T> {
  await executor.query(`SAVEPOINT ${SAVEPOINT}`);
  let result: T;
  try {
    result = await fn(executor);
  } catch (error) {
    await executor.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`).catch(() => undefined);
    await executor.query(`RELEASE SAVEPOINT ${SAVEPOINT}`).catch(() => undefined);
    throw error;
  }
  await executor.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  return result;
}

/**
 * The store's statements for `start()` / `signal()` with `{ transaction }`, on the application's
 * transaction (a mysql2 connection, an ORM's handle, a `SqlExecutor`) and inside a savepoint of it
 * (`inSavepoint()`). A failure that shows the handle is on another database becomes a `TypeError`
 * that says so (`explainOtherMysqlDatabase()`).
 */
export async function inApplicationTransaction<T>(
  transaction: unknown,
  store: string,
  schema: string,
  fn: (executor: SqlExecutor) => Promise<T>,
): Promise<T> {
  try {
    // One call at a time per transaction: their savepoints must not interleave (see queueOnHandle()).
    return await queueOnHandle(transaction, async () =>
      inSavepoint(await mysqlTransactionExecutor(transaction, store), fn),
    );
  } catch (error) {
    throw explainOtherMysqlDatabase(error, store, schema, handleLibrary(transaction, 'mysql2')) ?? error;
  }
}

/**
 * Startup: the `transactions` option's transactions reach the store's tables (the same database),
 * else a `TypeError` that says so.
 */
export async function checkTransactions(
  transactions: Pick<SqlExecutor, 'transaction'>,
  store: string,
  schema: string,
  instances: string,
): Promise<void> {
  try {
    await transactions.transaction((tx) => tx.query(`SELECT 1 FROM ${instances} WHERE 1 = 0`));
  } catch (error) {
    throw explainOtherMysqlDatabase(error, store, schema, 'ORM (`transactions` option)') ?? error;
  }
}
