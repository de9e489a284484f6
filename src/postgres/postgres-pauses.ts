import { notifyCancel, notifyDue } from './postgres-sql-fragments.js';
import { quoteIdentifier } from '../sql/schema-name.js';
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
 * What a claim adds to its conditions on instance `alias` for the pauses: the instance is not
 * paused, and no pause of its workflow (every version, or its own) is stored. Read in the claim's
 * own statement, so a claim that starts after `pauseWorkflow()` resolved never takes one.
 */
export function postgresUnpaused(s: string, alias: string): string {
  return (
    `NOT ${alias}.paused AND NOT EXISTS (SELECT 1 FROM ${s}.paused_workflows pw ` +
    `WHERE pw.workflow = ${alias}.workflow AND pw.version IN (${EVERY_VERSION}, ${alias}.version))`
  );
}

/** The pauses' statements for a quoted schema. */
function pauseStatements(s: string) {
  return {
    /** $1 id, $2 reason, $3 now, $4 channel: the holder of a lease hears it as a cancel's notice. */
    pause: `UPDATE ${s}.instances SET paused = true, pause_reason = $2, updated_at = $3
WHERE id = $1 AND status IN ${UNFINISHED} AND NOT paused
RETURNING CASE WHEN lease_token IS NOT NULL THEN ${notifyCancel('$4', 'id')} END AS notified`,

    /** $1 id, $2 now, $3 channel: an instance due and free is named to the workers. */
    resume: `UPDATE ${s}.instances SET paused = false, pause_reason = NULL, updated_at = $2
WHERE id = $1 AND status IN ${UNFINISHED} AND paused
RETURNING CASE WHEN lease_token IS NULL AND wake_at <= $2 THEN ${notifyDue('$3', 'id')} END AS notified`,

    /** $1 workflow, $2 version (0: every one), $3 reason, $4 now. */
    pauseWorkflow: `INSERT INTO ${s}.paused_workflows (workflow, version, reason, paused_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (workflow, version) DO NOTHING`,

    /** $1 workflow, $2 version (0: every one), $3 channel: the workers look for work again. */
    resumeWorkflow: `WITH deleted AS (DELETE FROM ${s}.paused_workflows WHERE workflow = $1 AND version = $2 RETURNING 1)
SELECT pg_notify($3, '') FROM deleted`,

    pausedWorkflows: `SELECT workflow, version, reason, paused_at FROM ${s}.paused_workflows ORDER BY workflow COLLATE "C", version`,
  };
}

/** The pauses on PostgreSQL: each one statement, the notices sent at its commit. */
export class PostgresPauses implements SqlPauses {
  private readonly sql: ReturnType<typeof pauseStatements>;

  constructor(
    schema: string,
    /** The wake-up channel. */
    private readonly channel: string,
  ) {
    this.sql = pauseStatements(quoteIdentifier(schema));
  }

  async pause(executor: SqlExecutor, id: string, request: WorkflowPauseRequest): Promise<boolean> {
    const { rowCount } = await executor.query(this.sql.pause, [id, request.reason, request.now, this.channel]);
    return rowCount > 0;
  }

  async resume(executor: SqlExecutor, id: string, now: number): Promise<boolean> {
    const { rowCount } = await executor.query(this.sql.resume, [id, now, this.channel]);
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
      this.channel,
    ]);
    return rowCount > 0;
  }

  async pausedWorkflows(executor: SqlExecutor): Promise<WorkflowPausedWorkflow[]> {
    return (await executor.query(this.sql.pausedWorkflows, [])).rows.map(toPausedWorkflow);
  }
}
