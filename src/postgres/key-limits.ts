import { STORE_JOURNAL_KEY_BYTES, STORE_KEY_LIMITS } from '../storage/key-limits.js';
import { StoreInput } from '../storage/store-input.js';

/**
 * The longest keys `PostgresWorkflowStore` keeps, in characters; the store checks every key it
 * writes against them and throws a `RangeError` naming the field before it writes anything.
 * PostgreSQL's `text` has no length limit, but a B-tree index entry holds at most about 2,700 bytes,
 * and these keep every indexed combination inside that even in 4-byte characters: a signal's topic
 * (name + key), a dedupe key (name + id), a journal entry's (instance id + name, see
 * `POSTGRES_JOURNAL_KEY_BYTES`).
 */
export const POSTGRES_KEY_LIMITS: typeof STORE_KEY_LIMITS = STORE_KEY_LIMITS;

/**
 * A journal entry's instance id and name together, in UTF-8 bytes: the journal's primary key is
 * both. Only names in 3- and 4-byte characters near `journalName`'s limit can reach it.
 */
export const POSTGRES_JOURNAL_KEY_BYTES: typeof STORE_JOURNAL_KEY_BYTES = STORE_JOURNAL_KEY_BYTES;

/** What `PostgresWorkflowStore` checks before it writes anything (see `StoreInput`). */
export const POSTGRES_INPUT = new StoreInput('PostgresWorkflowStore', POSTGRES_KEY_LIMITS, POSTGRES_JOURNAL_KEY_BYTES);
