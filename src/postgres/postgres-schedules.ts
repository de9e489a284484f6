import { POSTGRES_INPUT } from './key-limits.js';
import { POSTGRES_DIALECT } from './postgres-dialect.js';
import { instanceColumns, notifyDue } from './postgres-sql-fragments.js';
import { newInstanceParams, scheduleParams } from '../sql/instance-params.js';
import { listSchedules } from '../sql/list-queries.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean, toInstance, toJson, toSchedule } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
} from '../storage/workflow-store.js';

function scheduleColumns(alias?: string): string {
  const a = alias ? `${alias}.` : '';
  return (
    `${a}id, ${a}workflow, ${a}declared, ${a}spec::text AS spec, ${a}input::text AS input, ${a}paused, ${a}wake_at, ` +
    `${a}state::text AS state, ${a}revision, ${a}lease_token, ${a}lease_owner, ${a}lease_until, ${a}created_at, ${a}updated_at`
  );
}

/** The schedules' statements for a quoted schema. */
function postgresScheduleStatements(s: string) {
  return {
    /** $1 id, $2 workflow, $3 declared, $4 spec, $5 input, $6 paused, $7 wake at, $8 state, $9 now. */
    insertSchedule: `INSERT INTO ${s}.schedules (id, workflow, declared, spec, input, paused, wake_at, state, revision, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9)
ON CONFLICT (id) DO NOTHING
RETURNING ${scheduleColumns()}`,

    /** As `insertSchedule`, plus $10 the expected revision and $11 whether to release the lease. */
    replaceSchedule: `UPDATE ${s}.schedules SET workflow = $2, declared = $3, spec = $4, input = $5, paused = $6, wake_at = $7,
  state = $8, revision = revision + 1, updated_at = $9,
  lease_token = CASE WHEN $11 THEN NULL ELSE lease_token END,
  lease_until = CASE WHEN $11 THEN NULL ELSE lease_until END
WHERE id = $1 AND revision = $10
RETURNING ${scheduleColumns()}`,

    /** $1 id. */
    getSchedule: `SELECT ${scheduleColumns()} FROM ${s}.schedules WHERE id = $1`,

    /** The start of `listSchedules()`; the store appends its filters, order and page. */
    listSchedulesPrefix: `SELECT ${scheduleColumns()} FROM ${s}.schedules`,

    /** $1 id, $2 revision or NULL. */
    deleteSchedule: `DELETE FROM ${s}.schedules WHERE id = $1 AND ($2::integer IS NULL OR revision = $2::integer)`,

    /** $1 now, $2 workflows, $3 limit, $4 token, $5 owner, $6 lease until. */
    claimSchedules: `WITH picked AS (
  SELECT id FROM ${s}.schedules
  WHERE NOT paused AND wake_at IS NOT NULL AND wake_at <= $1 AND workflow = ANY($2::text[])
    AND (lease_token IS NULL OR lease_until IS NULL OR lease_until < $1)
  ORDER BY wake_at, id LIMIT $3
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ${s}.schedules c SET lease_token = $4, lease_owner = $5, lease_until = $6
  FROM picked WHERE c.id = picked.id
  RETURNING ${scheduleColumns('c')}
)
SELECT * FROM claimed ORDER BY wake_at, id`,

    /**
     * `create` (in postgres-creates.ts)'s $1-$20, plus $21 schedule id, $22 its lease token and $23
     * its revision: creates only while $22 is the schedule's lease token and the lease is live at
     * $14 (now); with $22 NULL (a trigger), only while the schedule exists; with $23, only while
     * the schedule is still at that revision (a trigger's definition is the one it read). `FOR SHARE` holds the schedule row until
     * this statement commits, so a pause, change or delete of the schedule (an UPDATE or DELETE of
     * the row) waits for the insert; one that committed first, or that this statement waited for,
     * leaves no row to lock (READ COMMITTED re-checks the WHERE on the newest version). Always one
     * row: `held`, then the new row (`created`), the existing one, or NULLs (not held; or a
     * concurrent create committed after this statement's snapshot: read it again).
     */
    createOccurrence: `WITH fence AS (
  SELECT id FROM ${s}.schedules WHERE id = $21 AND ($22::text IS NULL OR (lease_token = $22 AND lease_until >= $14))
    AND ($23::int IS NULL OR revision = $23) FOR SHARE
), inserted AS (
  INSERT INTO ${s}.instances (id, workflow, version, status, input, parent_id, parent_close, concurrency_key,
    rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, signal_cursor, created_at, updated_at,
    runs, lease_token, lease_owner, lease_until, trace_context, run_timeout)
  SELECT $1, $2, $3, CASE WHEN $15::text IS NULL THEN 'pending' ELSE 'running' END, $4::json, $5, $6, $7, $8, $9, $10, $11, $12, $13,
    ${s}.last_signal_drawn(), $14, $14,
    CASE WHEN $15::text IS NULL THEN 0 ELSE 1 END, $15, $16, $17, $18::json, $19
  FROM fence
  ON CONFLICT (id) DO NOTHING
  RETURNING ${instanceColumns()}
)
SELECT f.held, r.* FROM (SELECT EXISTS (SELECT 1 FROM fence) AS held) f LEFT JOIN (
  SELECT true AS created, n.*, CASE WHEN n.wake_at <= $14 AND n.lease_token IS NULL THEN ${notifyDue('$20', 'n.id')} END AS notified FROM inserted n
  UNION ALL
  SELECT false, ${instanceColumns('e')}, NULL FROM ${s}.instances e WHERE e.id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)
) r ON f.held`,

    /** $1 id. */
    getInstance: `SELECT ${instanceColumns()} FROM ${s}.instances WHERE id = $1`,

    /** $1 id, $2 token, $3 state, $4 wake at, $5 now, $6 release, $7 the lease's new end or NULL. */
    writeSchedule: `UPDATE ${s}.schedules SET state = $3, wake_at = $4, revision = revision + 1, updated_at = $5,
  lease_token = CASE WHEN $6 THEN NULL ELSE lease_token END,
  lease_until = CASE WHEN $6 THEN NULL ELSE COALESCE($7::bigint, lease_until) END
WHERE id = $1 AND lease_token = $2`,
  };
}

/**
 * The schedule half of `PostgresWorkflowStore`: saves conditional on the revision, claims with
 * `FOR UPDATE SKIP LOCKED`, lease-fenced writes, and occurrences' creates fenced by the lease,
 * each one statement.
 */
export class PostgresSchedules {
  private readonly sql: ReturnType<typeof postgresScheduleStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    schemaName: string,
    /** The wake-up channel a new due instance is notified on. */
    private readonly channel: string,
  ) {
    this.sql = postgresScheduleStatements(quoteIdentifier(schemaName));
  }

  async save(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    POSTGRES_INPUT.schedule(save);
    const params = scheduleParams(save);
    const { rows } =
      save.expectRevision === null
        ? await this.executor.query(this.sql.insertSchedule, params)
        : await this.executor.query(this.sql.replaceSchedule, [...params, save.expectRevision, save.releaseLease]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  async get(id: string): Promise<WorkflowScheduleRecord | null> {
    const { rows } = await this.executor.query(this.sql.getSchedule, [id]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  list(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return listSchedules(this.executor, POSTGRES_DIALECT, this.sql.listSchedulesPrefix, query);
  }

  async delete(id: string, revision?: number): Promise<boolean> {
    const { rowCount } = await this.executor.query(this.sql.deleteSchedule, [id, revision ?? null]);
    return rowCount > 0;
  }

  async claim(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    POSTGRES_INPUT.token(request.token, request.owner);
    const { rows } = await this.executor.query(this.sql.claimSchedules, [
      request.now,
      request.workflows,
      request.limit,
      request.token,
      request.owner,
      request.leaseUntil,
    ]);
    return rows.map(toSchedule);
  }

  async write(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    const { rowCount } = await this.executor.query(this.sql.writeSchedule, [
      id,
      token,
      toJson(write.state ?? null),
      write.wakeAt,
      write.now,
      write.release,
      write.release ? null : (write.leaseUntil ?? null),
    ]);
    return rowCount > 0;
  }

  async createOccurrence(
    scheduleId: string,
    token: string | null,
    init: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    POSTGRES_INPUT.newInstance(init);
    const { rows } = await this.executor.query(this.sql.createOccurrence, [
      ...newInstanceParams(init),
      this.channel,
      scheduleId,
      token,
      revision ?? null,
    ]);
    const row = rows[0]!;
    if (!toBoolean(row.held)) return null;
    if (row.id !== null) return { instance: toInstance(row), created: toBoolean(row.created) };
    const again = await this.executor.query(this.sql.getInstance, [init.id]);
    if (!again.rows[0])
      throw new Error(`PostgresWorkflowStore: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: toInstance(again.rows[0]), created: false };
  }
}
