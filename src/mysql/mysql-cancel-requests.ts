import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlTables } from './mysql-tables.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { CANCELLABLE, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowCancelRequest } from '../storage/workflow-store.js';

/** `requestCancel()`'s statements for the store's tables. */
function cancelRequestStatements({ instances, cancelNotices }: MySqlTables) {
  // A paused instance is cancelled as it stands: the pause ends, so a worker can run the cancel.
  const cancel = (flags: string, condition: string) =>
    `UPDATE ${instances} i LEFT JOIN ${cancelNotices} n ON n.id = 1
SET ${flags}, i.cancel_reason = ?, i.paused = 0, i.pause_reason = NULL, i.wake_at = CASE WHEN i.wake_at IS NOT NULL AND i.wake_at <= ? THEN i.wake_at ELSE ? END, i.updated_at = ?,
  n.seq = n.seq + (i.lease_token IS NOT NULL)
WHERE i.id = ? AND ${condition}`;
  return {
    /** reason, now three times, id. */
    requestCancel: cancel('i.cancel_requested = 1', `i.status IN ${CANCELLABLE} AND i.cancel_requested = 0`),
    /** reason, now three times, id. */
    requestTerminate: cancel(
      'i.cancel_requested = 1, i.terminate_requested = 1',
      `i.status IN ${UNFINISHED} AND i.terminate_requested = 0`,
    ),
  };
}

/**
 * `requestCancel()` on MySQL: sets the flags and, when the instance is leased, counts the request in
 * `cancel_notices`, in one UPDATE of both (the counter joined LEFT: a missing counter row costs only
 * the notice, heard at the next heartbeat, never the request). The wake-up poll reads that count
 * (see `MySqlCancelNotices`).
 */
export class MySqlCancelRequests {
  private readonly sql: ReturnType<typeof cancelRequestStatements>;

  constructor(tables: MySqlTables) {
    this.sql = cancelRequestStatements(tables);
  }

  async requestCancel(executor: SqlExecutor, id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const sql = request.terminate ? this.sql.requestTerminate : this.sql.requestCancel;
    const { rowCount } = await retryOnLockContention(() =>
      executor.query(sql, [request.reason, request.now, request.now, request.now, id]),
    );
    return rowCount > 0;
  }
}
