import { wellFormedJson } from './well-formed-json.js';
import type { WorkflowJournalEntry } from './workflow-instance.js';

/**
 * Where an entry keeps its JSON text: a symbol-keyed, non-enumerable property, which neither
 * `JSON.stringify()`, a spread, `Object.keys()` nor an equality check sees (a WeakMap costs more
 * per entry than serializing it again).
 */
const TEXT = Symbol('@nestjs/workflows:json');

/**
 * `JSON.stringify(entry)`, made once per entry object the engine records and handed out again
 * after that: the engine sizes each entry it records (the journal limits), and a SQL store sends
 * the same text, so a step's result is serialized once on its way to the database instead of at
 * every layer.
 *
 * Only `keep: true` (the engine, for the entries it makes) keeps the text on the entry. The engine
 * never changes an entry once made (a new attempt, a compensation or a payload codec makes a new
 * entry object, and a spread copy leaves the text behind), which is what makes the kept text safe.
 * A store only reads what was kept: an entry handed to `write()` by other code, which may change
 * it in place and write it again, is serialized as it is at each write. Throws, as
 * `JSON.stringify()` does, on a value JSON can't carry (a BigInt, a cycle), and on a lone surrogate
 * or a NUL character (`wellFormedJson()`).
 */
export function journalEntryJson(entry: WorkflowJournalEntry, keep = false): string {
  const kept = keptJournalEntryJson(entry);
  if (kept !== undefined) return kept;
  const text = JSON.stringify(entry);
  // Checked (a lone surrogate, a NUL: see `wellFormedJson()`) before any store sends it: a SQL store
  // takes this text as it is. The message is made only for a text that may hold either.
  if (text.includes('\\ud') || text.includes('\\u0000'))
    wellFormedJson(text, `journal entry ${JSON.stringify(entry.name)}`);
  if (keep && Object.isExtensible(entry)) Object.defineProperty(entry, TEXT, { value: text });
  return text;
}

/** The text `journalEntryJson(entry, true)` kept on `entry` (an entry the engine made), or `undefined`. */
export function keptJournalEntryJson(entry: WorkflowJournalEntry): string | undefined {
  return (entry as { [TEXT]?: string })[TEXT];
}

/** `entries` as one JSON array text (`JSON.stringify(entries)`), from each entry's `journalEntryJson()`. */
export function journalJson(entries: readonly WorkflowJournalEntry[]): string {
  if (entries.length === 0) return '[]';
  if (entries.length === 1) return `[${journalEntryJson(entries[0]!)}]`;
  let text = '[';
  for (let index = 0; index < entries.length; index++)
    text += (index === 0 ? '' : ',') + journalEntryJson(entries[index]!);
  return `${text}]`;
}
