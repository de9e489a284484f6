import { MYSQL_INPUT } from './key-limits.js';
import type { MySqlCreates } from './mysql-creates.js';
import { MYSQL_DIALECT } from './mysql-dialect.js';
import { retryOnLockContention } from './mysql-retry.js';
import { placeholders, SCHEDULE_COLUMNS, type MySqlTables } from './mysql-tables.js';
import { scheduleParams } from '../sql/instance-params.js';
import { listSchedules } from '../sql/list-queries.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toSchedule } from '../sql/workflow-rows.js';
import type { SqlScheduleStore } from '../sql/sql-workflow-store.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type * as Store from '../storage/workflow-store.js';

/** The schedules' statements for the store's tables. */
function scheduleStatements({ schedules }: MySqlTables) {
  return {
    /** id, workflow, declared, spec, input, paused, wake at, state, now twice. */
    insertSchedule: `INSERT IGNORE INTO ${schedules} (id, workflow, declared, spec, input, paused, wake_at, state, created_at, updated_at, revision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
    /** workflow, declared, spec, input, paused, wake at, state, now, release twice, id, expected revision. */
    replaceSchedule: `UPDATE ${schedules} SET workflow = ?, declared = ?, spec = ?, input = ?, paused = ?, wake_at = ?, state = ?,
  updated_at = ?, revision = revision + 1,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE lease_until END
WHERE id = ? AND revision = ?`,
    /** id. */
    getSchedule: `SELECT ${SCHEDULE_COLUMNS} FROM ${schedules} WHERE id = ?`,
    /** The start of `listSchedules()`; the store appends its filters, order and page. */
    listSchedulesPrefix: `SELECT ${SCHEDULE_COLUMNS} FROM ${schedules}`,
    /** id, revision or NULL twice. */
    deleteSchedule: `DELETE FROM ${schedules} WHERE id = ? AND (? IS NULL OR revision = ?)`,
    /** now, each workflow, now, limit: the due schedules, locked, passing over those another claim holds. */
    dueSchedules: (workflows: number) => `SELECT ${SCHEDULE_COLUMNS} FROM ${schedules}
WHERE paused = 0 AND wake_at IS NOT NULL AND wake_at <= ? AND workflow IN (${placeholders(workflows)})
  AND (lease_token IS NULL OR lease_until IS NULL OR lease_until < ?)
ORDER BY wake_at, id LIMIT ? FOR UPDATE SKIP LOCKED`,
    /** token, owner, lease until, then the ids. */
    leaseSchedules: (ids: number) =>
      `UPDATE ${schedules} SET lease_token = ?, lease_owner = ?, lease_until = ? WHERE id IN (${placeholders(ids)})`,
    /** state, wake at, now, release twice, the lease's new end or NULL, id, token. */
    writeSchedule: `UPDATE ${schedules} SET state = ?, wake_at = ?, revision = revision + 1, updated_at = ?,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE COALESCE(?, lease_until) END
WHERE id = ? AND lease_token = ?`,
  };
}

/**
 * The schedule half of `MySqlWorkflowStore`: saves conditional on the revision (insert-or-ignore,
 * or an update that matches only the expected revision, read back under its row lock), claims
 * with `FOR UPDATE SKIP LOCKED`, lease-fenced writes, and occurrences' creates fenced by the lease.
 */
export class MySqlSchedules implements SqlScheduleStore {
  private readonly sql: ReturnType<typeof scheduleStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    tables: MySqlTables,
    /** An occurrence's create is an instance's create with the lease check in its statement. */
    private readonly creates: MySqlCreates,
  ) {
    this.sql = scheduleStatements(tables);
  }

  async save(save: Store.WorkflowScheduleSave): Promise<Store.WorkflowScheduleRecord | null> {
    MYSQL_INPUT.schedule(save);
    const [id, ...values] = scheduleParams(save);
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        const { rowCount } =
          save.expectRevision === null
            ? await tx.query(this.sql.insertSchedule, [id, ...values, save.now])
            : await tx.query(this.sql.replaceSchedule, [
                ...values,
                save.releaseLease,
                save.releaseLease,
                id,
                save.expectRevision,
              ]);
        if (rowCount === 0) return null;
        return this.getWith(tx, save.id);
      }),
    );
  }

  get(id: string): Promise<Store.WorkflowScheduleRecord | null> {
    return this.getWith(this.executor, id);
  }

  private async getWith(executor: SqlExecutor, id: string): Promise<Store.WorkflowScheduleRecord | null> {
    const { rows } = await executor.query(this.sql.getSchedule, [id]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  list(query: Store.WorkflowScheduleQuery): Promise<Store.WorkflowScheduleRecord[]> {
    return listSchedules(this.executor, MYSQL_DIALECT, this.sql.listSchedulesPrefix, query);
  }

  async delete(id: string, revision?: number): Promise<boolean> {
    const { rowCount } = await retryOnLockContention(() =>
      this.executor.query(this.sql.deleteSchedule, [id, revision ?? null, revision ?? null]),
    );
    return rowCount > 0;
  }

  async claim(request: Store.WorkflowScheduleClaimRequest): Promise<Store.WorkflowScheduleRecord[]> {
    MYSQL_INPUT.token(request.token, request.owner);
    if (request.workflows.length === 0) return [];
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        const { rows } = await tx.query(this.sql.dueSchedules(request.workflows.length), [
          request.now,
          ...request.workflows,
          request.now,
          request.limit,
        ]);
        if (rows.length === 0) return [];
        await tx.query(this.sql.leaseSchedules(rows.length), [
          request.token,
          request.owner,
          request.leaseUntil,
          ...rows.map((row) => row.id),
        ]);
        return rows.map((row) => ({
          ...toSchedule(row),
          leaseToken: request.token,
          leaseOwner: request.owner,
          leaseUntil: request.leaseUntil,
        }));
      }),
    );
  }

  async write(id: string, token: string, write: Store.WorkflowScheduleWrite): Promise<boolean> {
    const state = toJson(write.state ?? null);
    const { rowCount } = await retryOnLockContention(() =>
      this.executor.query(this.sql.writeSchedule, [
        state,
        write.wakeAt,
        write.now,
        write.release,
        write.release,
        write.leaseUntil ?? null,
        id,
        token,
      ]),
    );
    return rowCount > 0;
  }

  createOccurrence(
    scheduleId: string,
    token: string | null,
    init: Store.NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    MYSQL_INPUT.newInstance(init);
    return this.creates.createOccurrence(scheduleId, token, init, revision);
  }
}
