import { journalEntryJson } from '../storage/journal-entry-json.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { JournalLimitEvent, JournalLimits } from './journal-limits.js';
import { isPatchMarker } from './patch-markers.js';

const NOTHING_LOADED: ReadonlySet<string> = new Set();

/**
 * An execution's view of its instance's journal: what was loaded, what this execution recorded and
 * has not written yet (the buffer), and the journal's size against the module's limits.
 */
export class ExecutionJournal {
  private readonly entries = new Map<string, WorkflowJournalEntry>();
  private readonly buffer = new Map<string, WorkflowJournalEntry>();
  /** The names an earlier execution recorded. */
  readonly loaded: ReadonlySet<string>;
  private bytes = 0;
  private warned = false;

  constructor(
    journal: readonly WorkflowJournalEntry[],
    private readonly limits: JournalLimits,
  ) {
    for (const entry of journal) this.remember(entry);
    this.loaded = journal.length === 0 ? NOTHING_LOADED : new Set(this.entries.keys());
  }

  get(name: string): WorkflowJournalEntry | undefined {
    return this.entries.get(name);
  }

  /** Every entry, in first-write order. */
  all(): IterableIterator<WorkflowJournalEntry> {
    return this.entries.values();
  }

  /** The entries an earlier execution recorded that are not in `visited` (compensations and patch markers aside). */
  unvisited(visited: ReadonlySet<string>): string[] {
    return [...this.loaded].filter((name) => !visited.has(name) && this.expected(name));
  }

  /** Whether an entry an earlier execution recorded is not in `visited` (as `unvisited()` counts them). */
  ahead(visited: ReadonlySet<string>): boolean {
    for (const name of this.loaded) if (!visited.has(name) && this.expected(name)) return true;
    return false;
  }

  /** Whether the code must reach a loaded entry again: compensations are the saga's, markers outlive their patch. */
  private expected(name: string): boolean {
    return this.entries.get(name)!.kind !== 'compensation' && !isPatchMarker(name);
  }

  /** Whether a completed step that has a compensation in `compensations` was not compensated yet. */
  needsCompensation(compensations: ReadonlyMap<string, unknown>): boolean {
    for (const entry of this.entries.values()) {
      if (entry.kind === 'step' && entry.state === 'completed' && !entry.compensated && compensations.has(entry.name))
        return true;
    }
    return false;
  }

  /** Whether a child is journaled. */
  hasChild(): boolean {
    for (const entry of this.entries.values()) if (entry.kind === 'child') return true;
    return false;
  }

  /** Whether entries wait to be written. */
  get pending(): boolean {
    return this.buffer.size > 0;
  }

  /**
   * Records an entry for the next write. A new entry (compensations aside) is checked against the
   * limits first: past a maximum it is not recorded and `onLimit` hears `max`; the first time a
   * warning threshold is reached it hears `warn`. Returns false when the entry was refused.
   */
  record(entry: WorkflowJournalEntry, onLimit: (event: JournalLimitEvent) => void): boolean {
    const isNew = !this.entries.has(entry.name) && entry.kind !== 'compensation';
    if (isNew && !this.hasRoom(entry.name, onLimit)) return false;
    this.remember(entry);
    this.buffer.set(entry.name, entry);
    // Checked with the entry counted, so the entry that reaches a threshold (in entries or bytes) reports it.
    if (
      isNew &&
      !this.warned &&
      (this.entries.size >= this.limits.warnEntries || this.bytes >= this.limits.warnBytes)
    ) {
      this.warned = true;
      onLimit({ kind: 'warn', entries: this.entries.size, bytes: this.bytes });
    }
    return true;
  }

  /**
   * Whether a new entry named `name` would be recorded (one the journal holds always is); past a
   * maximum, `onLimit` hears `max`. Asked before a side effect, so none runs that can't be recorded.
   */
  hasRoom(name: string, onLimit: (event: JournalLimitEvent) => void): boolean {
    if (this.entries.has(name)) return true;
    const count = this.entries.size;
    if (count < this.limits.maxEntries && this.bytes < this.limits.maxBytes) return true;
    onLimit({ kind: 'max', entries: count, bytes: this.bytes });
    return false;
  }

  /** An entry already written (by a transaction of its own): known from now on, not written again. */
  written(entry: WorkflowJournalEntry): void {
    this.remember(entry);
    this.buffer.delete(entry.name);
  }

  /** Takes the entries recorded since the last take, for a write. */
  take(): WorkflowJournalEntry[] {
    const entries = [...this.buffer.values()];
    this.buffer.clear();
    return entries;
  }

  private remember(entry: WorkflowJournalEntry): void {
    // The same text the store sends (made once per entry, and kept on it): sizing it, and the
    // entry it replaces, costs no extra serialization.
    const replaced = this.entries.get(entry.name);
    this.bytes +=
      journalEntryJson(entry, true).length - (replaced === undefined ? 0 : journalEntryJson(replaced, true).length);
    this.entries.set(entry.name, entry);
  }
}
