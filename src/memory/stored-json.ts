import { keptJournalEntryJson } from '../storage/journal-entry-json.js';
import { wellFormedJson } from '../storage/well-formed-json.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { NewWorkflowSignal } from '../storage/workflow-store.js';

/**
 * `value` as a store keeps it: a copy that went through JSON, exactly what a SQL store reads back
 * (fields holding `undefined` or a function are dropped, `undefined` in an array becomes `null`).
 * `undefined` itself stays `undefined`. Throws a `TypeError` naming `store` and `what` when JSON
 * can't carry the value (a BigInt, a cycle): the caller prepares every value of a call with this
 * before changing anything, so a refused value leaves nothing half written.
 */
export function toStoredJson<T>(value: T, store: string, what: string): T {
  // The values most writes carry (no error, no waits) come back as they are, without a round trip.
  if (value === undefined || value === null) return value;
  if (Array.isArray(value) && value.length === 0) return [] as T;
  const text = storedJsonText(value, store, what);
  // A lone function or symbol: JSON has nothing for it, as SQL stores keep nothing for it.
  return (text === undefined ? null : JSON.parse(text)) as T;
}

/** `JSON.stringify(value)`, checked as `toStoredJson()` checks it (and failing as it fails). */
function storedJsonText(value: unknown, store: string, what: string): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new TypeError(
      `${store}: ${what} can't be stored: it is not a JSON value (${(error as Error).message}). ` +
        'Store plain data: convert BigInts to strings or numbers, and break cycles.',
      { cause: error },
    );
  }
  return text === undefined ? undefined : wellFormedJson(text, `${store}: ${what}`);
}

/**
 * `entries` as the JSON texts a store keeps (what a SQL store writes), by position; throws, naming
 * the entry, when one can't be stored. An entry the engine made carries the text it was checked
 * and sized by (`keptJournalEntryJson()`): that text is taken, not made again.
 */
export function storedEntryTexts(store: string, id: string, entries: readonly WorkflowJournalEntry[]): string[] {
  const texts: string[] = new Array(entries.length);
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index]!;
    texts[index] =
      keptJournalEntryJson(entry) ?? storedJsonText(entry, store, `journal entry "${entry.name}" of instance "${id}"`)!;
  }
  return texts;
}

/** `signal` with its payload copied in as JSON (`undefined` as `null`); throws when the payload can't be stored. */
export function storedSignal(store: string, signal: NewWorkflowSignal): NewWorkflowSignal {
  const payload = toStoredJson(signal.payload, store, `the payload of signal "${signal.name}"`);
  return { ...signal, payload: payload ?? null };
}
