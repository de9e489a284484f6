import type { SqlExecutor } from '../sql/sql-executor.js';

/** How much longer than a `ctx.transaction()` step's timeout its statements may run (ms). */
const STATEMENT_TIMEOUT_MARGIN = 1_000;
/** The largest `statement_timeout` PostgreSQL takes (ms, about 24.8 days): a longer step's timeout is bounded by it. */
const MAX_STATEMENT_TIMEOUT = 2_147_483_647;

/**
 * The server's own limit on the statements of a `ctx.transaction()` step with a timeout (a second
 * past it), so a statement still running when the engine gave up on the attempt can't hold the
 * connection and its locks much longer: `SET LOCAL statement_timeout`, which ends with the
 * transaction.
 */
export class PostgresStatementTimeout {
  /** Runs `body` with each statement of `tx` bounded to `timeout` ms plus the margin (`null`: unbounded). */
  async around<T>(tx: SqlExecutor, timeout: number | null, body: () => Promise<T>): Promise<T> {
    if (timeout !== null)
      await tx.query(
        `SET LOCAL statement_timeout = ${Math.min(Math.ceil(timeout) + STATEMENT_TIMEOUT_MARGIN, MAX_STATEMENT_TIMEOUT)}`,
      );
    return body();
  }
}
