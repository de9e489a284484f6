import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';

/**
 * `entries` with each name once: a name given twice keeps its first place and its last entry, as
 * two upserts in a row would leave it (one statement can't upsert a row twice).
 */
export function distinctEntries(entries: readonly WorkflowJournalEntry[]): readonly WorkflowJournalEntry[] {
  if (entries.length < 2) return entries;
  const byName = new Map<string, WorkflowJournalEntry>();
  for (const entry of entries) byName.set(entry.name, entry);
  return byName.size === entries.length ? entries : [...byName.values()];
}
