import { newInstanceParams } from '../sql/instance-params.js';
import { toInstance } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';
import type { SqliteStatements } from './sqlite-statements.js';
import { INSTANCE_COLUMNS, lastSignalIdSql, type SqliteTables } from './sqlite-tables.js';

/** What `create()` returns. */
export interface CreateResult {
  instance: WorkflowInstance;
  created: boolean;
}

/** A create's values, made before any statement: an input JSON can't carry throws here. */
export interface PreparedCreate {
  id: string;
  params: unknown[];
}

/**
 * `init`'s row values in `INSERT_INSTANCE`'s order: `newInstanceParams()` (the columns of
 * `NEW_INSTANCE_COLUMNS`), then `updated_at`, the status and the run count (a local start's lease
 * counts its first run).
 */
export function prepareCreate(init: NewWorkflowInstance): PreparedCreate {
  return {
    id: init.id,
    params: [...newInstanceParams(init), init.now, init.lease ? 'running' : 'pending', init.lease ? 1 : 0],
  };
}

/**
 * Inserts the instance unless its id exists (insert-or-ignore: no error inside an application's
 * transaction), with the last signal id as its cursor, and reads it back: the new row, or the
 * existing one untouched.
 */
export function insertInstance(sql: SqliteStatements, t: SqliteTables, create: PreparedCreate): CreateResult {
  const created =
    sql.run(
      `INSERT INTO ${t.instances} (id, workflow, version, input, parent_id, parent_close, concurrency_key, rate_limit_key,
  priority, schedule_id, scheduled_at, deadline, wake_at, created_at, lease_token, lease_owner, lease_until, trace_context,
  run_timeout, updated_at, status, runs, signal_cursor)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${lastSignalIdSql(t)})
  ON CONFLICT (id) DO NOTHING`,
      create.params,
    ) > 0;
  const row = sql.get(`SELECT ${INSTANCE_COLUMNS} FROM ${t.instances} WHERE id = ?`, [create.id])!;
  return { instance: toInstance(row), created };
}
