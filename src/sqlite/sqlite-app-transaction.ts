import { WorkflowError } from '../errors/workflow.error.js';
import { isSqliteDatabase, transactionOpen } from './sqlite-driver.js';
import { SqliteStatements } from './sqlite-statements.js';

/** Statements prepared on the application's database handles, one set per handle. */
export type AppStatements = WeakMap<object, SqliteStatements>;

/**
 * Runs `fn` (synchronous) on the application's database handle (`start()` / `signal()` with
 * `transaction`), which must have a transaction open: run outside one, the statements would commit
 * on their own, whatever the application does next.
 */
export function inApplicationTransaction<T>(
  prepared: AppStatements,
  transaction: unknown,
  call: string,
  fn: (sql: SqliteStatements) => T,
): T {
  if (!isSqliteDatabase(transaction)) {
    throw new TypeError(
      `SqliteWorkflowStore: ${call} with \`transaction\` takes the better-sqlite3 (or node:sqlite) database the transaction is open on.`,
    );
  }
  if (transactionOpen(transaction) === false) {
    throw new WorkflowError(
      `SqliteWorkflowStore: ${call} with \`transaction\` found no transaction open on that database. Begin one first ` +
        "(db.exec('BEGIN IMMEDIATE')) and commit it after the call, or leave `transaction` out.",
    );
  }
  let sql = prepared.get(transaction);
  if (!sql) prepared.set(transaction, (sql = new SqliteStatements(transaction)));
  return fn(sql);
}
