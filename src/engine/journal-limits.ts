import { shownValue } from '../errors/shown-value.js';
import { WorkflowJournalLimitError } from '../errors/workflow-journal-limit.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import { checkKnownKeys } from '../options/known-keys.js';

/**
 * How large an instance's journal may grow. Every execution loads the whole journal and replays
 * `run()` from the top, so a journal that keeps growing (a loop with a step per round) makes every
 * execution slower. Counts are entries; bytes are their size as JSON. `Infinity` turns a check off.
 */
export interface WorkflowJournalLimits {
  /** Log a warning and emit `journal-large`, once per execution, at this many entries. Default 1,000. */
  warnEntries?: number;
  /** The same, at this many bytes. Default 1,000,000. */
  warnBytes?: number;
  /** Fail the instance (after compensating) instead of recording a new entry past this many. Default 10,000. */
  maxEntries?: number;
  /** The same, at this many bytes. Default 10,000,000. */
  maxBytes?: number;
}

export type JournalLimits = Required<WorkflowJournalLimits>;

/** What a journal reports when it passes a limit. */
export type JournalLimitEvent = { kind: 'warn' | 'max'; entries: number; bytes: number };

export const DEFAULT_JOURNAL_LIMITS: JournalLimits = {
  warnEntries: 1_000,
  warnBytes: 1_000_000,
  maxEntries: 10_000,
  maxBytes: 10_000_000,
};

/** Applies defaults; throws a `TypeError` naming the option for anything but a positive number. */
export function resolveJournalLimits(limits: WorkflowJournalLimits | undefined): JournalLimits {
  checkKnownKeys(limits, Object.keys(DEFAULT_JOURNAL_LIMITS), 'WorkflowsModule option "journal"');
  const resolved = { ...DEFAULT_JOURNAL_LIMITS, ...limits };
  for (const [key, value] of Object.entries(resolved)) {
    if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
      throw new TypeError(
        `Invalid journal.${key}: ${shownValue(value)}. Use a positive number (Infinity turns the check off).`,
      );
    }
  }
  return resolved;
}

/** Who a journal belongs to, for the messages below. */
interface JournalOwner {
  id: string;
  workflow: string;
  version: number;
}

/** The message of the `WorkflowJournalLimitError` an instance fails with at `maxEntries` / `maxBytes`. */
export function journalLimitMessage(
  owner: JournalOwner,
  limits: JournalLimits,
  entries: number,
  bytes: number,
): string {
  return (
    `Instance "${owner.id}" of workflow "${owner.workflow}@${owner.version}" reached its journal limit ` +
    `(${entries} entries, ${bytes} bytes; journal.maxEntries ${limits.maxEntries}, journal.maxBytes ${limits.maxBytes}). ` +
    'Split long loops into child workflows, or raise the limits in WorkflowsModule options.'
  );
}

/** The warning logged once per execution at `warnEntries` / `warnBytes`. */
export function largeJournalMessage(owner: JournalOwner, entries: number, bytes: number): string {
  return (
    `Instance "${owner.id}" of workflow "${owner.workflow}" has a large journal (${entries} entries, ${bytes} bytes); ` +
    'every execution replays all of it. Consider child workflows for long loops.'
  );
}

/**
 * What a journal reaching a limit does: past `maxEntries` / `maxBytes`, the error the instance fails
 * with (returned: the execution keeps the first); past a warning limit, a warning and `journal-large`.
 */
export function journalLimitReached(
  owner: JournalOwner,
  { kind, entries, bytes }: JournalLimitEvent,
  deps: { journalLimits: JournalLimits; warn(message: string): void; emit(body: WorkflowEventBody): void },
): WorkflowJournalLimitError | null {
  if (kind === 'max')
    return new WorkflowJournalLimitError(journalLimitMessage(owner, deps.journalLimits, entries, bytes));
  deps.warn(largeJournalMessage(owner, entries, bytes));
  deps.emit({ type: 'journal-large', entries, bytes });
  return null;
}
