import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';

/** An entry as the journal stores it: its instance, its name and its JSON text. */
export type JournalRow = [instanceId: string, name: string, entry: string];

/** `entries` as journal rows, serialized now: an entry JSON can't carry throws here, before any statement. */
export function journalRows(id: string, entries: readonly WorkflowJournalEntry[]): JournalRow[] {
  return entries.map((entry) => [id, entry.name, JSON.stringify(entry)]);
}

/**
 * Upserts journal entries by name, in one statement: a new name gets the next `seq`
 * (AUTO_INCREMENT, allocated in row order), so the journal keeps first-write order; an existing
 * name keeps its row and its `seq` and gets the new entry whole. Each name at most once per
 * instance (`distinctEntries()`).
 */
export async function upsertJournal(tx: SqlExecutor, table: string, rows: readonly JournalRow[]): Promise<void> {
  const params = rows.flat();
  if (params.length === 0) return;
  const values = Array.from({ length: rows.length }, () => '(?, ?, ?)').join(', ');
  await tx.query(`INSERT INTO ${table} (instance_id, name, entry) VALUES ${values} ON DUPLICATE KEY UPDATE entry = VALUES(entry)`, params);
}
