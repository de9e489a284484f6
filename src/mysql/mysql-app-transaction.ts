import { findInErrorChain } from '../errors/driver-error-chain.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** MySQL's "table doesn't exist" (ER_NO_SUCH_TABLE) and "unknown database" (ER_BAD_DB_ERROR). */
const NO_SUCH_TABLE = 1146;
const BAD_DATABASE = 1049;
/** MySQL's ER_SP_DOES_NOT_EXIST: the savepoint named is not there. */
const NO_SUCH_SAVEPOINT = 1305;
/** A PostgreSQL SQLSTATE (`42601`, `42P01`): five characters, at least one a digit (never Node's `EPIPE`, nor Prisma's `P2010`). */
const SQLSTATE = /^(?!P)(?=.*\d)[0-9A-Z]{5}$/;

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

const PROBE = 'nest_workflows_probe';

/**
 * Whether `executor`'s statements run in a transaction, asked with a savepoint (two statements,
 * on MySQL and MariaDB alike, through any library's handle): MySQL takes a `SAVEPOINT` outside a
 * transaction without a word, but the savepoint is gone with its own statement's commit, so
 * releasing it fails. Resolves to `null` in a transaction, else to the server's refusal of the
 * release (the cause to report); any other failure rejects.
 */
export async function outsideTransaction(executor: SqlExecutor): Promise<Error | null> {
  await executor.query(`SAVEPOINT ${PROBE}`);
  try {
    await executor.query(`RELEASE SAVEPOINT ${PROBE}`);
    return null;
  } catch (error) {
    if (databaseError(error)?.errno !== NO_SUCH_SAVEPOINT) throw error;
    return error instanceof Error ? error : new Error(String(error));
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

/**
 * The database's error, wherever the library put it (see `findInErrorChain`): `errno` (mysql2,
 * mariadb; TypeORM copies it), Prisma's driver adapter `originalCode` (the error number), and
 * PostgreSQL's `code` (a five-character SQLSTATE, for a handle on the wrong server).
 */
function databaseError(error: unknown): { errno: number | null; sqlState: string | null; message: string } | null {
  return (
    findInErrorChain(error, (fields) => {
      const { errno, code, originalCode, originalMessage } = fields;
      const message = String(fields.message ?? '').split('\n')[0]!;
      if (typeof errno === 'number' && errno > 0) return { errno, sqlState: null, message };
      if (typeof originalCode === 'string' && /^\d+$/.test(originalCode))
        return { errno: Number(originalCode), sqlState: null, message: String(originalMessage ?? message) };
      if (typeof code === 'string' && SQLSTATE.test(code)) return { errno: null, sqlState: code, message };
      return undefined;
    }) ?? null
  );
}
