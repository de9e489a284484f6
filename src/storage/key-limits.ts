import { markInputError } from '../errors/workflow-input-error.js';

/**
 * The longest keys a store keeps, in characters (Unicode code points, as the databases count
 * them). Every id, name and key below is part of an index in the SQL stores, and indexes cap the
 * size of an entry, so each store documents its limits and checks every key against them before it
 * writes anything (`StoreInput`).
 */
export interface StoreKeyLimits {
  /** An instance's id (`start({ id })`), and so a parent's or a child's. */
  readonly instanceId: number;
  /** A schedule's id: its runs' ids (`<id>@<ISO time>`, 25 characters more) must fit an instance id. */
  readonly scheduleId: number;
  /** A workflow's name. */
  readonly workflow: number;
  /** An instance's concurrency key. */
  readonly concurrencyKey: number;
  /** An instance's rate-limit key. */
  readonly rateLimitKey: number;
  /** A debounce key (`start(..., { debounce: { key } })`), kept with the workflow's name. */
  readonly debounceKey: number;
  /** A signal's name, and a wait's. */
  readonly signal: number;
  /** A signal's key, and a wait's. */
  readonly signalKey: number;
  /** A signal's id (`signal(..., { id })`), which deduplicates it. */
  readonly dedupeId: number;
  /** A journal entry's name: a step's, a sleep's, a wait's, or the engine's own (`$child:<id>`...). */
  readonly journalName: number;
  /** A lease token, and a lease owner (a worker's id). */
  readonly leaseToken: number;
}

/**
 * The limits every store we ship keeps: they fit PostgreSQL's B-tree entry (about 2,700 bytes) and
 * InnoDB's (3,072 bytes in utf8mb4) for every indexed combination, so an application moves between
 * the stores without renaming anything (the in-memory store keeps them so tests refuse what those
 * would).
 */
export const STORE_KEY_LIMITS = {
  instanceId: 255,
  scheduleId: 230,
  workflow: 255,
  concurrencyKey: 255,
  rateLimitKey: 255,
  debounceKey: 255,
  signal: 255,
  signalKey: 255,
  dedupeId: 255,
  journalName: 512,
  leaseToken: 255,
} as const satisfies StoreKeyLimits;

/**
 * A journal entry's instance id and name together, in UTF-8 bytes, for a store whose journal key
 * is bounded in bytes (PostgreSQL's primary key holds both). Only names in 3- and 4-byte characters
 * near `journalName`'s limit can reach it.
 */
export const STORE_JOURNAL_KEY_BYTES = 2_600;

/**
 * Throws a `RangeError` naming `field` and the limit when `value` is longer than `max` characters,
 * or when it holds a NUL character or a lone surrogate. `null` and `undefined` pass (absent keys
 * are stored as SQL `NULL`).
 */
export function checkKey(store: string, field: string, value: string | null | undefined, max: number): void {
  if (value === null || value === undefined) return;
  if (value.includes('\u0000')) {
    // PostgreSQL's text can't hold one (nor can a json value be read as text with one): the write
    // would fail in the database, with every write batched with it.
    throw markInputError(
      new RangeError(
        `${store}: ${field} ${JSON.stringify(value.slice(0, 40))} holds a NUL character (\\u0000), which no SQL store keeps in a key. Leave it out.`,
      ),
    );
  }
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    // Both drivers send it as U+FFFD (UTF-8 has no code for it): two keys that differ only there
    // would be one instance, or one signal topic.
    throw markInputError(
      new RangeError(
        `${store}: ${field} ${JSON.stringify(value.slice(0, 40))} holds a lone surrogate (half of a UTF-16 pair), which no SQL store keeps in a key. ` +
          'Make it well-formed first (String.prototype.toWellFormed()).',
      ),
    );
  }
  // UTF-16 length is never below the code point count: only a long string needs counting.
  if (value.length <= max) return;
  let length = 0;
  for (const _ of value) length++;
  if (length <= max) return;
  throw markInputError(
    new RangeError(
      `${store}: ${field} is ${length} characters long (${JSON.stringify(value.slice(0, 40))}...); ` +
        `the store keeps at most ${max}. Use a shorter ${field}.`,
    ),
  );
}
