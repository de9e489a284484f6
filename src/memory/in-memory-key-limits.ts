import { STORE_JOURNAL_KEY_BYTES, STORE_KEY_LIMITS } from '../storage/key-limits.js';
import { StoreInput } from '../storage/store-input.js';

// The in-memory store has no index to overflow, but tests run on it: it refuses every key that a
// SQL store we ship would refuse, with the same RangeError, so a test catches what production
// would. Both SQL stores keep STORE_KEY_LIMITS; PostgreSQL alone also bounds a journal entry's id
// and name together in bytes, and the strictest rule applies here.

/** The checks `InMemoryWorkflowStore` makes before it changes anything: the SQL stores' own. */
export const IN_MEMORY_INPUT = new StoreInput('InMemoryWorkflowStore', STORE_KEY_LIMITS, STORE_JOURNAL_KEY_BYTES);
