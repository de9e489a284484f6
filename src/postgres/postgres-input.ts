import { POSTGRES_JOURNAL_KEY_BYTES, POSTGRES_KEY_LIMITS as LIMITS } from './key-limits.js';
import { checkKey } from '../sql/key-limits.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance, NewWorkflowSignal } from '../storage/workflow-store.js';

// What PostgresWorkflowStore checks before it writes anything: keys against POSTGRES_KEY_LIMITS
// (an over-long key would otherwise fail in an index, or worse, inside the application's
// transaction), and integers against their columns.

const STORE = 'PostgresWorkflowStore';
const INT4 = 2 ** 31;

export function checkNewInstance(init: NewWorkflowInstance): void {
  checkKey(STORE, 'instance id', init.id, LIMITS.instanceId);
  checkKey(STORE, 'workflow name', init.workflow, LIMITS.workflow);
  checkKey(STORE, 'parent id', init.parentId, LIMITS.instanceId);
  checkKey(STORE, 'concurrency key', init.concurrencyKey, LIMITS.concurrencyKey);
  checkKey(STORE, 'rate-limit key', init.rateLimitKey, LIMITS.rateLimitKey);
  checkKey(STORE, 'schedule id', init.scheduleId, LIMITS.scheduleId);
  checkInteger('version', init.version);
  checkInteger('priority', init.priority ?? 0);
}

export function checkSignal(signal: NewWorkflowSignal): void {
  checkWait(signal.name, signal.key);
  checkKey(STORE, 'signal id (dedupe id)', signal.dedupeId, LIMITS.dedupeId);
}

export function checkWait(name: string, key: string | null): void {
  checkKey(STORE, 'signal name', name, LIMITS.signal);
  checkKey(STORE, 'signal key', key, LIMITS.signalKey);
}

export function checkEntries(id: string, entries: readonly WorkflowJournalEntry[]): void {
  for (const entry of entries) {
    checkKey(STORE, 'journal entry name', entry.name, LIMITS.journalName);
    // The journal's primary key holds both: only names in multi-byte characters near the limit reach it.
    if ((id.length + entry.name.length) * 3 <= POSTGRES_JOURNAL_KEY_BYTES) continue;
    const bytes = Buffer.byteLength(id) + Buffer.byteLength(entry.name);
    if (bytes > POSTGRES_JOURNAL_KEY_BYTES) {
      throw new RangeError(
        `${STORE}: journal entry name ${JSON.stringify(entry.name.slice(0, 40))}... takes, with its instance id, ${bytes} ` +
          `bytes in UTF-8; the store keeps at most ${POSTGRES_JOURNAL_KEY_BYTES}. Use a shorter step, sleep or wait name.`,
      );
    }
  }
}

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

function checkInteger(field: string, value: number): void {
  if (!Number.isInteger(value) || value < -INT4 || value >= INT4) {
    throw new RangeError(`${STORE}: ${field} must be an integer between ${-INT4} and ${INT4 - 1}, got ${String(value)}.`);
  }
}
