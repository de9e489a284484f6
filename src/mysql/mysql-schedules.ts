import { MYSQL_INPUT } from './key-limits.js';
import type { MySqlCreates } from './mysql-creates.js';
import { MYSQL_DIALECT } from './mysql-dialect.js';
import { retryOnLockContention } from './mysql-retry.js';
import { placeholders, SCHEDULE_COLUMNS, type MySqlTables } from './mysql-tables.js';
import { scheduleParams } from '../sql/instance-params.js';
import { listSchedulesStatement } from '../sql/list-queries.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toSchedule } from '../sql/workflow-rows.js';
import type { SqlScheduleStore } from '../sql/sql-workflow-store.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type * as Store from '../storage/workflow-store.js';

/**
 * The schedule half of `MySqlWorkflowStore`: saves conditional on the revision (insert-or-ignore,
 * or an update that matches only the expected revision, read back under its row lock), claims
 * with `FOR UPDATE SKIP LOCKED`, lease-fenced writes, and occurrences' creates fenced by the lease.
 */
export class MySqlSchedules implements SqlScheduleStore {
  private readonly table: string;

  constructor(
    private readonly executor: SqlExecutor,
    tables: MySqlTables,
    /** An occurrence's create is an instance's create with the lease check in its statement. */
    private readonly creates: MySqlCreates,
  ) {
    this.table = tables.schedules;
  }

  async save(save: Store.WorkflowScheduleSave): Promise<Store.WorkflowScheduleRecord | null> {
    MYSQL_INPUT.schedule(save);
    const [id, ...values] = scheduleParams(save);
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        const { rowCount } =
          save.expectRevision === null
            ? await tx.query(
                `INSERT IGNORE INTO ${this.table} (id, workflow, declared, spec, input, paused, wake_at, state, created_at, updated_at, revision)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
                [id, ...values, save.now],
              )
            : await tx.query(
                `UPDATE ${this.table} SET workflow = ?, declared = ?, spec = ?, input = ?, paused = ?, wake_at = ?, state = ?,
  updated_at = ?, revision = revision + 1,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE lease_until END
WHERE id = ? AND revision = ?`,
                [...values, save.releaseLease, save.releaseLease, id, save.expectRevision],
              );
        if (rowCount === 0) return null;
        return this.getWith(tx, save.id);
      }),
    );
  }

  get(id: string): Promise<Store.WorkflowScheduleRecord | null> {
    return this.getWith(this.executor, id);
  }

  private async getWith(executor: SqlExecutor, id: string): Promise<Store.WorkflowScheduleRecord | null> {
    const { rows } = await executor.query(`SELECT ${SCHEDULE_COLUMNS} FROM ${this.table} WHERE id = ?`, [id]);
    return rows[0] ? toSchedule(rows[0]) : null;
  }

  async list(query: Store.WorkflowScheduleQuery): Promise<Store.WorkflowScheduleRecord[]> {
    const { sql, params } = listSchedulesStatement(
      MYSQL_DIALECT,
      `SELECT ${SCHEDULE_COLUMNS} FROM ${this.table}`,
      query,
    );
    const { rows } = await this.executor.query(sql, params);
    return rows.map(toSchedule);
  }

  async delete(id: string, revision?: number): Promise<boolean> {
    const { rowCount } = await retryOnLockContention(() =>
      this.executor.query(`DELETE FROM ${this.table} WHERE id = ? AND (? IS NULL OR revision = ?)`, [
        id,
        revision ?? null,
        revision ?? null,
      ]),
    );
    return rowCount > 0;
  }

  async claim(request: Store.WorkflowScheduleClaimRequest): Promise<Store.WorkflowScheduleRecord[]> {
    MYSQL_INPUT.token(request.token, request.owner);
    if (request.workflows.length === 0) return [];
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        const { rows } = await tx.query(
          `SELECT ${SCHEDULE_COLUMNS} FROM ${this.table}
WHERE paused = 0 AND wake_at IS NOT NULL AND wake_at <= ? AND workflow IN (${placeholders(request.workflows.length)})
  AND (lease_token IS NULL OR lease_until IS NULL OR lease_until < ?)
ORDER BY wake_at, id LIMIT ? FOR UPDATE SKIP LOCKED`,
          [request.now, ...request.workflows, request.now, request.limit],
        );
        if (rows.length === 0) return [];
        await tx.query(
          `UPDATE ${this.table} SET lease_token = ?, lease_owner = ?, lease_until = ? WHERE id IN (${placeholders(rows.length)})`,
          [request.token, request.owner, request.leaseUntil, ...rows.map((row) => row.id)],
        );
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
      this.executor.query(
        `UPDATE ${this.table} SET state = ?, wake_at = ?, revision = revision + 1, updated_at = ?,
  lease_token = CASE WHEN ? THEN NULL ELSE lease_token END, lease_until = CASE WHEN ? THEN NULL ELSE COALESCE(?, lease_until) END
WHERE id = ? AND lease_token = ?`,
        [state, write.wakeAt, write.now, write.release, write.release, write.leaseUntil ?? null, id, token],
      ),
    );
    return rowCount > 0;
  }

  createOccurrence(
    scheduleId: string,
    token: string | null,
    init: Store.NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    MYSQL_INPUT.newInstance(init);
    return this.creates.createOccurrence(scheduleId, token, init);
  }
}
