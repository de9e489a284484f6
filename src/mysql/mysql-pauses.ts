import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlTables } from './mysql-tables.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toPausedWorkflow, type SqlPauses } from '../sql/sql-pauses.js';
import { UNFINISHED } from '../sql/status-lists.js';
import {
  EVERY_VERSION,
  type WorkflowPausedWorkflow,
  type WorkflowPauseRequest,
  type WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';

/**
 * What a claim adds to its conditions on the instance row (columns named without an alias, or
 * with `alias`): the instance is not paused, and no pause of its workflow (every version, or its
 * own) is stored. A plain read in the claim's locking statement (a subquery's rows are not locked),
 * so a claim that starts after `pauseWorkflow()` resolved never takes one.
 */
export function mysqlUnpaused(tables: MySqlTables, alias = tables.instances): string {
  return (
    `${alias}.paused = 0 AND NOT EXISTS (SELECT 1 FROM ${tables.pausedWorkflows} pw ` +
    `WHERE pw.workflow = ${alias}.workflow AND pw.version IN (${EVERY_VERSION}, ${alias}.version))`
  );
}

/** The pauses' statements for the store's tables. */
function pauseStatements(tables: MySqlTables) {
  const { instances, cancelNotices, pausedWorkflows } = tables;
  return {
    /** reason, now, id: a leased instance counts as a cancel notice, so its holder reads its flags at once. */
    pause: `UPDATE ${instances} i LEFT JOIN ${cancelNotices} n ON n.id = 1
SET i.paused = 1, i.pause_reason = ?, i.updated_at = ?, n.seq = n.seq + (i.lease_token IS NOT NULL)
WHERE i.id = ? AND i.status IN ${UNFINISHED} AND i.paused = 0`,
    /** now, id. */
    resume: `UPDATE ${instances} SET paused = 0, pause_reason = NULL, updated_at = ?
WHERE id = ? AND status IN ${UNFINISHED} AND paused = 1`,
    /** workflow, version (0: every one), reason, now. The key's length was checked before (StoreInput). */
    pauseWorkflow: `INSERT IGNORE INTO ${pausedWorkflows} (workflow, version, reason, paused_at) VALUES (?, ?, ?, ?)`,
    /** workflow, version (0: every one). */
    resumeWorkflow: `DELETE FROM ${pausedWorkflows} WHERE workflow = ? AND version = ?`,
    pausedWorkflows: `SELECT workflow, version, reason, paused_at FROM ${pausedWorkflows} ORDER BY workflow, version`,
  };
}

/** The pauses on MySQL: each one statement (retried on lock contention, as a cancel is). */
export class MySqlPauses implements SqlPauses {
  private readonly sql: ReturnType<typeof pauseStatements>;

  constructor(tables: MySqlTables) {
    this.sql = pauseStatements(tables);
  }

  async pause(executor: SqlExecutor, id: string, request: WorkflowPauseRequest): Promise<boolean> {
    const { rowCount } = await retryOnLockContention(() =>
      executor.query(this.sql.pause, [request.reason, request.now, id]),
    );
    return rowCount > 0;
  }

  async resume(executor: SqlExecutor, id: string, now: number): Promise<boolean> {
    const { rowCount } = await retryOnLockContention(() => executor.query(this.sql.resume, [now, id]));
    return rowCount > 0;
  }

  async pauseWorkflow(
    executor: SqlExecutor,
    target: WorkflowPauseTarget,
    request: WorkflowPauseRequest,
  ): Promise<boolean> {
    const { rowCount } = await executor.query(this.sql.pauseWorkflow, [
      target.workflow,
      target.version ?? EVERY_VERSION,
      request.reason,
      request.now,
    ]);
    return rowCount > 0;
  }

  async resumeWorkflow(executor: SqlExecutor, target: WorkflowPauseTarget): Promise<boolean> {
    const { rowCount } = await executor.query(this.sql.resumeWorkflow, [
      target.workflow,
      target.version ?? EVERY_VERSION,
    ]);
    return rowCount > 0;
  }

  async pausedWorkflows(executor: SqlExecutor): Promise<WorkflowPausedWorkflow[]> {
    return (await executor.query(this.sql.pausedWorkflows, [])).rows.map(toPausedWorkflow);
  }
}
