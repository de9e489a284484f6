import type { WorkflowForkOrigin } from '../storage/workflow-instance.js';
import { insertInstance, type CreateResult, type PreparedCreate } from './sqlite-creates.js';
import { upsertJournal, type JournalRow } from './sqlite-journal.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/**
 * `fork()` on SQLite, in one write transaction: the create (insert-or-ignore), then, only when it
 * created the row, the origin and the journal (each new row's rowid after the last: entries' order).
 */
export function insertFork(
  sql: SqliteStatements,
  t: SqliteTables,
  create: PreparedCreate,
  from: WorkflowForkOrigin,
  rows: readonly JournalRow[],
): CreateResult {
  const result = insertInstance(sql, t, create);
  if (!result.created) return result;
  sql.run(`UPDATE ${t.instances} SET forked_from = ?, forked_from_step = ? WHERE id = ?`, [
    from.id,
    from.step,
    create.id,
  ]);
  upsertJournal(sql, t, create.id, rows);
  result.instance.forkedFrom = { id: from.id, step: from.step };
  return result;
}
