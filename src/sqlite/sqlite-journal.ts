import { distinctEntries } from '../sql/distinct-entries.js';
import { journalEntryJson } from '../storage/journal-entry-json.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { SqliteStatements } from './sqlite-statements.js';
import { deleteStreams } from './sqlite-streams.js';
import type { SqliteTables } from './sqlite-tables.js';

/** An entry as the journal stores it: its name and its JSON text. */
export type JournalRow = [name: string, entry: string];

/** `entries` as journal rows (each name once), serialized now: an entry JSON can't carry throws here, before any statement. */
export function journalRows(entries: readonly WorkflowJournalEntry[]): JournalRow[] {
  return distinctEntries(entries).map((entry) => [entry.name, journalEntryJson(entry)]);
}

/**
 * Upserts journal rows by name: a new name gets the next rowid (so the journal keeps first-write
 * order); an existing one keeps its row and gets the new entry whole.
 */
export function upsertJournal(sql: SqliteStatements, t: SqliteTables, id: string, rows: readonly JournalRow[]): void {
  for (const [name, entry] of rows) {
    sql.run(
      `INSERT INTO ${t.journal} (instance_id, name, entry) VALUES (?, ?, ?)
  ON CONFLICT (instance_id, name) DO UPDATE SET entry = excluded.entry`,
      [id, name, entry],
    );
  }
}

/** The journal of `id` in first-write order. */
export function readJournal(sql: SqliteStatements, t: SqliteTables, id: string): WorkflowJournalEntry[] {
  return sql
    .all<{ entry: string }>(`SELECT entry FROM ${t.journal} WHERE instance_id = ? ORDER BY seq`, [id])
    .map((row) => JSON.parse(row.entry) as WorkflowJournalEntry);
}

/** Deletes instances with their journals, waits and streams. */
export function deleteInstances(sql: SqliteStatements, t: SqliteTables, ids: readonly string[]): number {
  let deleted = 0;
  for (const id of ids) {
    sql.run(`DELETE FROM ${t.journal} WHERE instance_id = ?`, [id]);
    sql.run(`DELETE FROM ${t.waits} WHERE instance_id = ?`, [id]);
    deleteStreams(sql, t, id);
    deleted += sql.run(`DELETE FROM ${t.instances} WHERE id = ?`, [id]);
  }
  return deleted;
}
