import type { SqlExecutor, SqlQueryOptions } from '../sql/sql-executor.js';

/** How much longer than a `ctx.transaction()` step's timeout its statements may run (ms). */
export const STATEMENT_TIMEOUT_MARGIN = 1_000;

const WRITES_NOTHING: SqlQueryOptions = { writesNothing: true };

/** The session variable that holds the session's own limit while a step's is set. */
const SAVED = '@nest_workflows_statement_limit';

/**
 * The server's own limit on the statements of a `ctx.transaction()` step with a timeout, so a
 * statement still running when the engine gave up on the attempt can't hold the connection and its
 * locks much longer (PostgreSQL's `SET LOCAL statement_timeout`). MySQL has no per-transaction
 * setting: it is the session's, set on the transaction's connection before the callback and set
 * back to the session's own value before the commit or rollback (the connection goes back to a
 * pool, whose sessions the application may have given a limit of their own).
 *
 * - MariaDB: `max_statement_time` (seconds), which bounds every statement.
 * - MySQL: `max_execution_time` (ms), which bounds read-only `SELECT`s only: writes, DDL and
 *   stored procedures are not bounded by the server there.
 *
 * The server's kind is read once (`SELECT VERSION()`), in the first step with a timeout.
 */
export class MySqlStatementTimeout {
  private variable: Promise<{ name: string; value: (ms: number) => string }> | null = null;

  /** Runs `body` with each statement of `tx` bounded to `timeout` ms plus the margin (`null`: unbounded). */
  async around<T>(tx: SqlExecutor, timeout: number | null, body: () => Promise<T>): Promise<T> {
    if (timeout === null) return body();
    const { name, value } = await (this.variable ??= this.detect(tx));
    // The session's own value is kept (in a user variable of the session, in the same statement)
    // and put back: the application may have set a limit of its own on its pool's sessions.
    await tx.query(
      `SET ${SAVED} = @@SESSION.${name}, @@SESSION.${name} = ${value(Math.ceil(timeout) + STATEMENT_TIMEOUT_MARGIN)}`,
    );
    try {
      return await body();
    } finally {
      // A failure here (the connection broke) is the transaction's to report: it rolls back or ends the connection.
      // Sent even when the server rolled the transaction back under the callback: it writes nothing.
      await tx.query(`SET @@SESSION.${name} = ${SAVED}`, [], WRITES_NOTHING).catch(() => undefined);
    }
  }

  private async detect(tx: SqlExecutor): Promise<{ name: string; value: (ms: number) => string }> {
    try {
      const { rows } = await tx.query('SELECT VERSION() AS version');
      return /mariadb/i.test(String(rows[0]?.version ?? ''))
        ? { name: 'max_statement_time', value: (ms) => (ms / 1000).toFixed(3) }
        : { name: 'max_execution_time', value: (ms) => String(ms) };
    } catch (error) {
      this.variable = null;
      throw error;
    }
  }
}
