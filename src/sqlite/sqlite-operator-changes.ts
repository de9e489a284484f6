import { signalTopic } from '../sql/signal-topic.js';
import { toBoolean, toJson, toNumber } from '../sql/workflow-rows.js';
import { FINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowCancelRequest, WorkflowReopen } from '../storage/workflow-store.js';
import { deleteInstances, journalRows, upsertJournal, type JournalRow } from './sqlite-journal.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import { UNFINISHED, type SqliteTables } from './sqlite-tables.js';

// What an operator (or the engine on an operator's behalf) changes outside any lease: cancel and
// terminate requests, reopens, deletes. Each runs in the caller's write transaction, so its check
// and its change are one step no other process can come between.

/** How many cancel requests `requestCancel()` keeps for other processes' `listen()` to read. */
const KEPT_CANCEL_REQUESTS = 1_000;

/** A paused instance is cancelled as it stands: the pause ends, so a worker can run the cancel. */
const UNPAUSE = 'paused = 0, pause_reason = NULL';

const MAKE_DUE = 'wake_at = CASE WHEN wake_at IS NULL OR wake_at > ? THEN ? ELSE wake_at END, updated_at = ?';

/** `requestCancel()`: one conditional update, then a row other processes' `listen()` reads. */
export function requestCancel(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  request: WorkflowCancelRequest,
): boolean {
  const { now, reason } = request;
  const changed = request.terminate
    ? sql.run(
        `UPDATE ${t.instances} SET cancel_requested = 1, terminate_requested = 1, cancel_reason = ?, ${UNPAUSE}, ${MAKE_DUE}
  WHERE id = ? AND status IN ${UNFINISHED} AND terminate_requested = 0`,
        [reason, now, now, now, id],
      )
    : sql.run(
        `UPDATE ${t.instances} SET cancel_requested = 1, cancel_reason = ?, ${UNPAUSE}, ${MAKE_DUE}
  WHERE id = ? AND status IN ('pending', 'running', 'suspended') AND cancel_requested = 0`,
        [reason, now, now, now, id],
      );
  if (changed === 0) return false;
  const seq = sql.insert(`INSERT INTO ${t.cancelRequests} (instance_id) VALUES (?)`, [id])!;
  sql.run(`DELETE FROM ${t.cancelRequests} WHERE seq <= ?`, [seq - KEPT_CANCEL_REQUESTS]);
  return true;
}

/** A reopen's values, made before the transaction (an entry or error JSON can't carry throws here). */
export interface PreparedReopen {
  reopen: WorkflowReopen;
  journal: JournalRow[];
  error: string | null;
}

export function prepareReopen(reopen: WorkflowReopen): PreparedReopen {
  return { reopen, journal: journalRows(reopen.entries), error: toJson(reopen.error) };
}

/** `reopen()`: refuses unless the instance is unleased and still as the caller read it, and each awaited child can still end it. */
export function reopenInstance(sql: SqliteStatements, t: SqliteTables, id: string, prepared: PreparedReopen): boolean {
  const { reopen } = prepared;
  const row = sql.get<{
    status: string;
    runs: number;
    lease_token: string | null;
    lease_until: number | null;
    terminate_requested: number;
  }>(`SELECT status, runs, lease_token, lease_until, terminate_requested FROM ${t.instances} WHERE id = ?`, [id]);
  if (!row || row.status !== reopen.expect.status || toNumber(row.runs) !== reopen.expect.runs) return false;
  if (row.lease_token !== null && row.lease_until !== null && toNumber(row.lease_until) >= reopen.now) return false;
  if (reopen.awaitedChildren?.length && !endsReachable(sql, t, reopen.awaitedChildren)) return false;
  upsertJournal(sql, t, id, prepared.journal);
  // A cancel's compensations retried stay a cancel's (the engine then ends the instance cancelled).
  const keepCancel = reopen.status === 'compensating' && !toBoolean(row.terminate_requested);
  const cancel = keepCancel ? '' : ', cancel_requested = 0, cancel_reason = NULL';
  const deadline = reopen.deadline !== undefined ? ', deadline = ?' : '';
  // A lapsed token must not write again: the reopened run belongs to whoever claims it next.
  sql.run(
    `UPDATE ${t.instances} SET status = ?, error = ?${deadline}${cancel}, terminate_requested = 0,
  lease_token = NULL, lease_until = NULL, wake_at = ?, updated_at = ? WHERE id = ?`,
    [reopen.status, prepared.error, ...(deadline ? [reopen.deadline] : []), reopen.now, reopen.now, id],
  );
  const retract = reopen.retractSignal;
  if (retract) sql.run(`DELETE FROM ${t.signals} WHERE name = ? AND dedupe_id = ?`, [retract.name, retract.dedupeId]);
  return true;
}

/** Whether each of `children` exists and is unfinished or has its end stored. */
function endsReachable(sql: SqliteStatements, t: SqliteTables, children: readonly string[]): boolean {
  const rows = sql.all<{ id: string; status: WorkflowStatus }>(
    `SELECT id, status FROM ${t.instances} WHERE id IN (${placeholders(children.length)})`,
    children,
  );
  if (rows.length < new Set(children).size) return false;
  return rows.every(
    (child) =>
      !FINISHED_STATUSES.includes(child.status) ||
      sql.get(`SELECT 1 AS found FROM ${t.signals} WHERE topic = ? LIMIT 1`, [
        signalTopic(CHILD_ENDED_SIGNAL, child.id),
      ]) !== undefined,
  );
}

/** Whether instance `id` is a child whose parent exists unfinished (its end reaches the parent only through it). */
export function parentUnfinished(sql: SqliteStatements, t: SqliteTables, id: string): boolean {
  return (
    sql.get(
      `SELECT 1 AS found FROM ${t.instances} c JOIN ${t.instances} p ON p.id = c.parent_id
  WHERE c.id = ? AND p.status IN ${UNFINISHED}`,
      [id],
    ) !== undefined
  );
}

/** `delete()`: only in one of `statuses`, and never a child whose parent is unfinished. */
export function deleteInstance(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  statuses: readonly WorkflowStatus[],
): boolean {
  const row = sql.get<{ status: WorkflowStatus }>(`SELECT status FROM ${t.instances} WHERE id = ?`, [id]);
  if (!row || !statuses.includes(row.status) || parentUnfinished(sql, t, id)) return false;
  return deleteInstances(sql, t, [id]) > 0;
}
