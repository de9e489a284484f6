import { findInErrorChain } from '../errors/driver-error-chain.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { handleExecutor, handleLibrary } from '../sql/handles/handle-executor.js';
import { queueOnHandle } from '../sql/transaction-handle-queue.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean } from '../sql/workflow-rows.js';
import { pgTransactionExecutor } from './from-pg.js';

const SAVEPOINT = 'nest_workflows_store';

/** $1 the store's instances table as `schema.instances`: whether this connection's database has it. */
const SCHEMA_EXISTS = `SELECT to_regclass($1::text) IS NOT NULL AS found`;

/**
 * The store's statements for `start()` / `signal()` with `{ transaction }`, on the application's
 * transaction (a `pg` client, an ORM's handle, a `SqlExecutor`) and inside a savepoint of it: a
 * statement of the store that fails is rolled back to the savepoint, so the application's
 * transaction stays usable (PostgreSQL would otherwise refuse every statement until it ends) and
 * its own rows still commit. A failure that shows the handle is on another database (no store
 * schema there, or not PostgreSQL at all) becomes a `TypeError` that says so.
 */
export function inApplicationTransaction<T>(
  handle: unknown,
  store: string,
  schema: string,
  fn: (executor: SqlExecutor) => Promise<T>,
): Promise<T> {
  // One call at a time per transaction: their savepoints must not interleave (see queueOnHandle()).
  return queueOnHandle(handle, () => inSavepoint(handle, store, schema, fn));
}

async function inSavepoint<T>(
  handle: unknown,
  store: string,
  schema: string,
  fn: (executor: SqlExecutor) => Promise<T>,
): Promise<T> {
  const executor = handleExecutor(handle, 'dollar', (driver) => pgTransactionExecutor(driver, store));
  const library = handleLibrary(handle, 'pg client');
  try {
    await executor.query(`SAVEPOINT ${SAVEPOINT}`);
  } catch (error) {
    if (sqlState(error)?.state === '25P01') {
      throw new WorkflowError(
        `${store}: the ${library} passed as \`transaction\` is not in a transaction, so the store's statements would commit on ` +
          "their own. Pass the client you ran BEGIN on (or your ORM's transaction handle), before COMMIT.",
      );
    }
    throw explainOtherDatabase(error, store, schema, library) ?? error;
  }
  try {
    const result = await fn(executor);
    await executor.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
    return result;
  } catch (error) {
    await executor.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`).catch(() => undefined);
    await executor.query(`RELEASE SAVEPOINT ${SAVEPOINT}`).catch(() => undefined);
    throw explainOtherDatabase(error, store, schema, library) ?? error;
  }
}

/**
 * A `TypeError` naming the cause when `error` shows that the statements reached another database
 * than the store's: one without the store's schema (undefined schema, table or function), or one
 * that is not PostgreSQL (MySQL's parse error). `null` for any other failure.
 */
export function explainOtherDatabase(error: unknown, store: string, schema: string, library: string): TypeError | null {
  const found = sqlState(error);
  if (!found) return null;
  const { state, message } = found;
  if (state === '3F000' || state === '42P01' || state === '42883') {
    return new TypeError(
      `${store}: the ${library} transaction reaches a database without the store's schema "${schema}" (${message}). ` +
        "Pass a transaction on the store's database, the one its executor connects to (or migrate the store there).",
    );
  }
  if (state === 'ER_PARSE_ERROR' || state === '1064') {
    return new TypeError(
      `${store}: the ${library} transaction is not on PostgreSQL (${message}). Pass a transaction on the store's database.`,
    );
  }
  return null;
}

/**
 * The database's error code, wherever the library put it: `code` (pg, mysql2, TypeORM), `cause`
 * (Drizzle), `driverError` (TypeORM), Prisma's `meta` (its P2010 wraps the database's own code, in
 * `meta.code` or in its driver adapter's error, `meta.driverAdapterError.cause.originalCode`).
 */
export function sqlState(error: unknown): { state: string; message: string } | null {
  const found = findInErrorChain(error, ({ code, errno, meta, originalCode, originalMessage, message: text }) => {
    const message = String(text ?? '').split('\n')[0]!;
    if (typeof originalCode === 'string') return { state: originalCode, message: String(originalMessage ?? message) };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('P'))
      return { state: code, message };
    if (code === 'ER_PARSE_ERROR' || errno === 1064) return { state: 'ER_PARSE_ERROR', message };
    if (typeof meta?.code === 'string')
      return { state: meta.code, message: typeof meta.message === 'string' ? meta.message : message };
    return undefined;
  });
  return found ?? null;
}

/**
 * Startup: the `transactions` option's transactions reach the store's schema (the same database),
 * else a `TypeError` that says so.
 */
export async function checkTransactions(
  transactions: Pick<SqlExecutor, 'transaction'>,
  store: string,
  schema: string,
): Promise<void> {
  let found: boolean;
  try {
    found = await transactions.transaction(async (tx) =>
      toBoolean((await tx.query(SCHEMA_EXISTS, [`${schema}.instances`])).rows[0]?.found),
    );
  } catch (error) {
    throw explainOtherDatabase(error, store, schema, 'ORM (`transactions` option)') ?? error;
  }
  if (!found) {
    throw new TypeError(
      `${store}: the \`transactions\` option's ORM reaches a database without the store's schema "${schema}". ` +
        "Build it over the store's database (the one its executor connects to), so ctx.transaction() writes the step's result there.",
    );
  }
}
