import { insertInstance, type CreateResult, type PreparedCreate } from './sqlite-creates.js';
import type { SqliteStatements } from './sqlite-statements.js';
import { INSTANCE_COLUMNS, type SqliteTables } from './sqlite-tables.js';
import { fromJson, toInstance, toJson, toNumber } from '../sql/workflow-rows.js';
import { debouncedTimes, notStarted } from '../storage/debounce-rule.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/**
 * `create()` with `debounce` on SQLite (the rule is `WorkflowStore.create()`'s), inside the write
 * transaction that holds the file's write lock, so no other create of the key runs in between:
 * the instance the key names is updated while it has not started, else `create` is inserted and
 * the key points at it.
 */
export function debouncedInsert(
  sql: SqliteStatements,
  t: SqliteTables,
  init: NewWorkflowInstance,
  create: PreparedCreate,
): CreateResult {
  const key = init.debounce!.key;
  const row = sql.get<{ instance_id: string; first_at: unknown }>(
    `SELECT instance_id, first_at FROM ${t.debounceKeys} WHERE workflow = ? AND key = ?`,
    [init.workflow, key],
  );
  if (row) {
    const stored = sql.get(`SELECT ${INSTANCE_COLUMNS} FROM ${t.instances} WHERE id = ?`, [row.instance_id]);
    const found = stored ? toInstance(stored) : null;
    if (found && notStarted(found)) {
      const input = toJson(init.input ?? null)!;
      const times = debouncedTimes(init, found, toNumber(row.first_at));
      sql.run(`UPDATE ${t.instances} SET input = ?, wake_at = ?, deadline = ?, updated_at = ? WHERE id = ?`, [
        input,
        times.wakeAt,
        times.deadline,
        times.updatedAt,
        found.id,
      ]);
      return { instance: { ...found, ...times, input: fromJson(input) }, created: false };
    }
  }
  sql.run(
    `INSERT INTO ${t.debounceKeys} (workflow, key, instance_id, first_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (workflow, key) DO UPDATE SET instance_id = excluded.instance_id, first_at = excluded.first_at`,
    [init.workflow, key, init.id, init.now],
  );
  return insertInstance(sql, t, create);
}
