import { scheduleParams } from '../sql/instance-params.js';
import { toJson, toSchedule } from '../sql/workflow-rows.js';
import type {
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
} from '../storage/workflow-store.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import { SCHEDULE_COLUMNS, type SqliteTables } from './sqlite-tables.js';

// The schedule half of `SqliteWorkflowStore`, each call in the caller's transaction (a write's
// holds the write lock: a save conditional on the revision, a claim and a fenced write are each
// one step no other process can come between).

/** A save's values, made before the transaction (a spec, input or state JSON can't carry throws here). */
export function prepareScheduleSave(save: WorkflowScheduleSave): unknown[] {
  return scheduleParams(save);
}

export function saveSchedule(
  sql: SqliteStatements,
  t: SqliteTables,
  save: WorkflowScheduleSave,
  params: unknown[],
): WorkflowScheduleRecord | null {
  const [id, ...values] = params;
  const changed =
    save.expectRevision === null
      ? sql.run(
          `INSERT INTO ${t.schedules} (id, workflow, declared, spec, input, paused, wake_at, state, created_at, updated_at, revision)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
          [id, ...values, save.now],
        )
      : sql.run(
          `UPDATE ${t.schedules} SET workflow = ?, declared = ?, spec = ?, input = ?, paused = ?, wake_at = ?, state = ?,
  updated_at = ?, revision = revision + 1,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE lease_until END
  WHERE id = ? AND revision = ?`,
          [...values, save.releaseLease, save.releaseLease, id, save.expectRevision],
        );
  return changed === 0 ? null : getSchedule(sql, t, save.id);
}

export function getSchedule(sql: SqliteStatements, t: SqliteTables, id: string): WorkflowScheduleRecord | null {
  const row = sql.get(`SELECT ${SCHEDULE_COLUMNS} FROM ${t.schedules} WHERE id = ?`, [id]);
  return row ? toSchedule(row) : null;
}

export function listSchedules(
  sql: SqliteStatements,
  t: SqliteTables,
  query: WorkflowScheduleQuery,
): WorkflowScheduleRecord[] {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (condition: string, value: unknown) => {
    where.push(condition);
    params.push(value);
  };
  if (query.workflow !== undefined) add('workflow = ?', query.workflow);
  if (query.declared !== undefined) add('declared = ?', query.declared);
  if (query.after !== undefined) add('id > ?', query.after);
  const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  return sql
    .all(`SELECT ${SCHEDULE_COLUMNS} FROM ${t.schedules}${filter} ORDER BY id LIMIT ? OFFSET ?`, [
      ...params,
      query.limit,
      query.offset,
    ])
    .map(toSchedule);
}

export function deleteSchedule(sql: SqliteStatements, t: SqliteTables, id: string, revision?: number): boolean {
  return revision === undefined
    ? sql.run(`DELETE FROM ${t.schedules} WHERE id = ?`, [id]) > 0
    : sql.run(`DELETE FROM ${t.schedules} WHERE id = ? AND revision = ?`, [id, revision]) > 0;
}

export function claimSchedules(
  sql: SqliteStatements,
  t: SqliteTables,
  request: WorkflowScheduleClaimRequest,
): WorkflowScheduleRecord[] {
  const rows = sql.all(
    `SELECT ${SCHEDULE_COLUMNS} FROM ${t.schedules}
  WHERE paused = 0 AND wake_at IS NOT NULL AND wake_at <= ? AND workflow IN (${placeholders(request.workflows.length)})
    AND (lease_token IS NULL OR lease_until IS NULL OR lease_until < ?)
  ORDER BY wake_at, id LIMIT ?`,
    [request.now, ...request.workflows, request.now, request.limit],
  );
  if (rows.length === 0) return [];
  sql.run(
    `UPDATE ${t.schedules} SET lease_token = ?, lease_owner = ?, lease_until = ? WHERE id IN (${placeholders(rows.length)})`,
    [request.token, request.owner, request.leaseUntil, ...rows.map((row) => row.id)],
  );
  return rows.map((row) => ({
    ...toSchedule(row),
    leaseToken: request.token,
    leaseOwner: request.owner,
    leaseUntil: request.leaseUntil,
  }));
}

/** A schedule write's state as JSON text, made before the transaction. */
export function prepareScheduleWrite(write: WorkflowScheduleWrite): string | null {
  return toJson(write.state ?? null);
}

export function writeSchedule(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  token: string,
  write: WorkflowScheduleWrite,
  state: string | null,
): boolean {
  return (
    sql.run(
      `UPDATE ${t.schedules} SET state = ?, wake_at = ?, revision = revision + 1, updated_at = ?,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE COALESCE(?, lease_until) END
  WHERE id = ? AND lease_token = ?`,
      [state, write.wakeAt, write.now, write.release, write.release, write.leaseUntil ?? null, id, token],
    ) > 0
  );
}

/**
 * The fence of `createOccurrence()`: whether `token` holds the schedule's lease, live at `now`;
 * with `token: null` (a trigger), whether the schedule exists; with `revision`, also whether it is
 * still at it. In the create's write transaction, so no release, delete, takeover or save lands
 * between the check and the insert.
 */
export function occurrenceFenced(
  sql: SqliteStatements,
  t: SqliteTables,
  scheduleId: string,
  token: string | null,
  now: number,
  revision?: number,
): boolean {
  return (
    sql.get(
      `SELECT 1 AS found FROM ${t.schedules} WHERE id = ? AND (? IS NULL OR (lease_token = ? AND lease_until >= ?))
  AND (? IS NULL OR revision = ?)`,
      [scheduleId, token, token, now, revision ?? null, revision ?? null],
    ) !== undefined
  );
}
