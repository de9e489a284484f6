import { instanceColumns } from './postgres-sql-fragments.js';
import type { CreateResult } from '../sql/create-batch.js';
import { debouncedCreate, type DebounceSteps } from '../sql/debounced-create.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toInstance, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** The statements of a debounced create for a quoted schema (see `debouncedCreate()`). */
function debounceStatements(s: string) {
  return {
    /**
     * $1 workflow, $2 key, $3 instance id, $4 now. The update on conflict writes nothing new but
     * takes the row's lock (waiting for a creator of the same key to commit) and returns the row.
     */
    lockKey: `INSERT INTO ${s}.debounce_keys (workflow, key, instance_id, first_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (workflow, key) DO UPDATE SET first_at = ${s}.debounce_keys.first_at
RETURNING instance_id, first_at`,
    /** $1 id. */
    lockInstance: `SELECT ${instanceColumns()} FROM ${s}.instances WHERE id = $1 FOR UPDATE`,
    /** $1 id, $2 input (JSON text), $3 wake at, $4 deadline, $5 now. */
    update: `UPDATE ${s}.instances SET input = $2::json, wake_at = $3, deadline = $4, updated_at = $5 WHERE id = $1`,
    /** $1 workflow, $2 key, $3 instance id, $4 now. */
    pointKey: `UPDATE ${s}.debounce_keys SET instance_id = $3, first_at = $4 WHERE workflow = $1 AND key = $2`,
  };
}

/**
 * `create()` with `debounce` on PostgreSQL: `debouncedCreate()` in one transaction of the store's
 * own, or on the application's transaction (inside the store's savepoint), its create the store's
 * single-row one (`insert`).
 */
export class PostgresDebounces {
  private readonly sql: ReturnType<typeof debounceStatements>;

  constructor(
    schema: string,
    private readonly insert: (executor: SqlExecutor, init: NewWorkflowInstance) => Promise<CreateResult>,
  ) {
    this.sql = debounceStatements(quoteIdentifier(schema));
  }

  /** On `executor`: the pool (a transaction of its own) or the application's transaction. */
  create(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult> {
    return executor.transaction((tx) => debouncedCreate(this.steps(tx), init));
  }

  private steps(tx: SqlExecutor): DebounceSteps {
    const { sql } = this;
    return {
      async lockKey(workflow, key, id, now) {
        const { rows } = await tx.query(sql.lockKey, [workflow, key, id, now]);
        return { instanceId: String(rows[0]!.instance_id), firstAt: toNumber(rows[0]!.first_at) };
      },
      async lockInstance(id) {
        const { rows } = await tx.query(sql.lockInstance, [id]);
        return rows[0] ? toInstance(rows[0]) : null;
      },
      async update(id, input, times) {
        await tx.query(sql.update, [id, input, times.wakeAt, times.deadline, times.updatedAt]);
      },
      async pointKey(workflow, key, id, now) {
        await tx.query(sql.pointKey, [workflow, key, id, now]);
      },
      insert: (init) => this.insert(tx, init),
    };
  }
}
