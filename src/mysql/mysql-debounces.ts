import { retryOnLockContention } from './mysql-retry.js';
import { INSTANCE_COLUMNS, type MySqlTables } from './mysql-tables.js';
import type { CreateResult } from '../sql/create-batch.js';
import { debouncedCreate, type DebounceSteps } from '../sql/debounced-create.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toInstance, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** The statements of a debounced create for the store's tables (see `debouncedCreate()`). */
function debounceStatements(t: MySqlTables) {
  return {
    /**
     * The key's row, inserted unless it exists: either way the statement takes its exclusive lock
     * (a duplicate key's update locks the existing row, waiting for a creator of the same key).
     */
    upsertKey: `INSERT INTO ${t.debounceKeys} (workflow, debounce_key, instance_id, first_at) VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE first_at = first_at`,
    /** The row under the lock the upsert took: a locking read sees its newest version. */
    readKey: `SELECT instance_id, first_at FROM ${t.debounceKeys} WHERE workflow = ? AND debounce_key = ? FOR UPDATE`,
    lockInstance: `SELECT ${INSTANCE_COLUMNS} FROM ${t.instances} WHERE id = ? FOR UPDATE`,
    update: `UPDATE ${t.instances} SET input = ?, wake_at = ?, deadline = ?, updated_at = ? WHERE id = ?`,
    pointKey: `UPDATE ${t.debounceKeys} SET instance_id = ?, first_at = ? WHERE workflow = ? AND debounce_key = ?`,
  };
}

/**
 * `create()` with `debounce` on MySQL: `debouncedCreate()` in one transaction of the store's own
 * (run again after a deadlock, all of it having been rolled back), or in the application's.
 */
export class MySqlDebounces {
  private readonly sql: ReturnType<typeof debounceStatements>;

  constructor(
    tables: MySqlTables,
    /** The store's create of one instance: on the pool's transaction, or in the application's (`inApplication`). */
    private readonly insert: (
      executor: SqlExecutor,
      init: NewWorkflowInstance,
      inApplication: boolean,
    ) => Promise<CreateResult>,
  ) {
    this.sql = debounceStatements(tables);
  }

  /** In a transaction of the store's own on `executor` (the pool). */
  create(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult> {
    return retryOnLockContention(() => executor.transaction((tx) => debouncedCreate(this.steps(tx, false), init)));
  }

  /** On the application's transaction. */
  createInTransaction(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult> {
    return debouncedCreate(this.steps(executor, true), init);
  }

  private steps(tx: SqlExecutor, inApplication: boolean): DebounceSteps {
    const { sql } = this;
    return {
      async lockKey(workflow, key, id, now) {
        await tx.query(sql.upsertKey, [workflow, key, id, now]);
        const { rows } = await tx.query(sql.readKey, [workflow, key]);
        return { instanceId: String(rows[0]!.instance_id), firstAt: toNumber(rows[0]!.first_at) };
      },
      async lockInstance(id) {
        const { rows } = await tx.query(sql.lockInstance, [id]);
        return rows[0] ? toInstance(rows[0]) : null;
      },
      async update(id, input, times) {
        await tx.query(sql.update, [input, times.wakeAt, times.deadline, times.updatedAt, id]);
      },
      async pointKey(workflow, key, id, now) {
        await tx.query(sql.pointKey, [id, now, workflow, key]);
      },
      insert: (init) => this.insert(tx, init, inApplication),
    };
  }
}
