import { toPausedWorkflow } from '../sql/sql-pauses.js';
import {
  EVERY_VERSION,
  type WorkflowPausedWorkflow,
  type WorkflowPauseRequest,
  type WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';
import type { SqliteStatements } from './sqlite-statements.js';
import { UNFINISHED, type SqliteTables } from './sqlite-tables.js';

// The pauses, each in the caller's write transaction (the file's write lock): a pause and a claim
// or a holder's write come one after the other, never between each other's check and change.

/** How many notices `pause()` keeps for other processes' `listen()`, as `requestCancel()` does. */
const KEPT_NOTICES = 1_000;

/**
 * What a claim (and the due counts) add to their conditions on an instance row: not paused, and no
 * pause of its workflow (every version, or its own) is stored.
 */
export function sqliteUnpaused(t: SqliteTables): string {
  return (
    `paused = 0 AND NOT EXISTS (SELECT 1 FROM ${t.pausedWorkflows} pw ` +
    `WHERE pw.workflow = ${t.instances}.workflow AND pw.version IN (${EVERY_VERSION}, ${t.instances}.version))`
  );
}

/** `pause()`: one conditional update; a leased instance's holder hears of it through the cancel requests' feed. */
export function pauseInstance(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  request: WorkflowPauseRequest,
): boolean {
  const row = sql.get<{ lease_token: string | null }>(
    `SELECT lease_token FROM ${t.instances} WHERE id = ? AND status IN ${UNFINISHED} AND paused = 0`,
    [id],
  );
  if (!row) return false;
  sql.run(`UPDATE ${t.instances} SET paused = 1, pause_reason = ?, updated_at = ? WHERE id = ?`, [
    request.reason,
    request.now,
    id,
  ]);
  if (row.lease_token !== null) {
    const seq = sql.insert(`INSERT INTO ${t.cancelRequests} (instance_id) VALUES (?)`, [id])!;
    sql.run(`DELETE FROM ${t.cancelRequests} WHERE seq <= ?`, [seq - KEPT_NOTICES]);
  }
  return true;
}

/** `resume()`: clears the pause of an unfinished paused instance; its wake-up stays. */
export function resumeInstance(sql: SqliteStatements, t: SqliteTables, id: string, now: number): boolean {
  return (
    sql.run(
      `UPDATE ${t.instances} SET paused = 0, pause_reason = NULL, updated_at = ?
  WHERE id = ? AND status IN ${UNFINISHED} AND paused = 1`,
      [now, id],
    ) > 0
  );
}

export function pauseWorkflow(
  sql: SqliteStatements,
  t: SqliteTables,
  target: WorkflowPauseTarget,
  request: WorkflowPauseRequest,
): boolean {
  return (
    sql.run(
      `INSERT INTO ${t.pausedWorkflows} (workflow, version, reason, paused_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (workflow, version) DO NOTHING`,
      [target.workflow, target.version ?? EVERY_VERSION, request.reason, request.now],
    ) > 0
  );
}

export function resumeWorkflow(sql: SqliteStatements, t: SqliteTables, target: WorkflowPauseTarget): boolean {
  return (
    sql.run(`DELETE FROM ${t.pausedWorkflows} WHERE workflow = ? AND version = ?`, [
      target.workflow,
      target.version ?? EVERY_VERSION,
    ]) > 0
  );
}

export function pausedWorkflows(sql: SqliteStatements, t: SqliteTables): WorkflowPausedWorkflow[] {
  return sql
    .all(`SELECT workflow, version, reason, paused_at FROM ${t.pausedWorkflows} ORDER BY workflow, version`)
    .map(toPausedWorkflow);
}
