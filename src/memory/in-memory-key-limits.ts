import { POSTGRES_JOURNAL_KEY_BYTES } from '../postgres/key-limits.js';
import { SQL_KEY_LIMITS } from '../sql/key-limits.js';
import { SqlStoreInput } from '../sql/store-input.js';

// The in-memory store has no index to overflow, but tests run on it: it refuses every key that a
// SQL store we ship would refuse, with the same RangeError, so a test catches what production
// would. Both SQL stores keep SQL_KEY_LIMITS; PostgreSQL alone also bounds a journal entry's id and
// name together in bytes, and the strictest rule applies here (constants only: no driver loads).

/** The checks `InMemoryWorkflowStore` makes before it changes anything: the SQL stores' own. */
export const IN_MEMORY_INPUT = new SqlStoreInput('InMemoryWorkflowStore', SQL_KEY_LIMITS, POSTGRES_JOURNAL_KEY_BYTES);
