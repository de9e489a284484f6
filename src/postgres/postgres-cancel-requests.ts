import { notifyCancel } from './postgres-sql-fragments.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { CANCELLABLE, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowCancelRequest } from '../storage/workflow-store.js';

/** `requestCancel()`'s statements for a quoted schema. */
function cancelRequestStatements(s: string) {
  // A paused instance is cancelled as it stands: the pause ends, so a worker can run the cancel.
  const cancel = (condition: string, flags: string) => `UPDATE ${s}.instances SET ${flags}, cancel_reason = $2,
  paused = false, pause_reason = NULL,
  wake_at = CASE WHEN wake_at IS NOT NULL AND wake_at <= $3 THEN wake_at ELSE $3 END, updated_at = $3
WHERE id = $1 AND ${condition}
RETURNING ${notifyCancel('$4', 'id')} AS notified`;

  return {
    /** $1 id, $2 reason, $3 now, $4 channel. */
    requestCancel: cancel(`status IN ${CANCELLABLE} AND NOT cancel_requested`, 'cancel_requested = true'),

    /** $1 id, $2 reason, $3 now, $4 channel. */
    requestTerminate: cancel(
      `status IN ${UNFINISHED} AND NOT terminate_requested`,
      'cancel_requested = true, terminate_requested = true',
    ),
  };
}

/**
 * `requestCancel()` on PostgreSQL: one UPDATE sets the flags and makes the instance due, and names
 * it on the wake-up channel (`cancel:<id>`) at its commit, for the worker that holds its lease.
 */
export class PostgresCancelRequests {
  private readonly sql: ReturnType<typeof cancelRequestStatements>;

  constructor(
    schema: string,
    /** The wake-up channel the request is notified on. */
    private readonly channel: string,
  ) {
    this.sql = cancelRequestStatements(quoteIdentifier(schema));
  }

  async requestCancel(executor: SqlExecutor, id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const sql = request.terminate ? this.sql.requestTerminate : this.sql.requestCancel;
    const { rowCount } = await executor.query(sql, [id, request.reason, request.now, this.channel]);
    return rowCount > 0;
  }
}
