import { POSTGRES_JOURNAL_KEY_BYTES, POSTGRES_KEY_LIMITS } from '../postgres/key-limits.js';
import type { SqlKeyLimits } from '../sql/key-limits.js';
import { SqlStoreInput } from '../sql/store-input.js';

// The in-memory store has no index to overflow, but tests run on it: it refuses every key that a
// SQL store we ship would refuse, with the same RangeError, so a test catches what production
// would. The limits are the strictest of the SQL stores' (constants only: no driver is loaded).

function strictest(...all: SqlKeyLimits[]): SqlKeyLimits {
  const keys = Object.keys(all[0]!) as Array<keyof SqlKeyLimits>;
  return Object.fromEntries(keys.map((key) => [key, Math.min(...all.map((limits) => limits[key]))])) as unknown as SqlKeyLimits;
}

/** The longest keys `InMemoryWorkflowStore` keeps: for each key, the least any shipped SQL store allows. */
export const IN_MEMORY_KEY_LIMITS: SqlKeyLimits = strictest(POSTGRES_KEY_LIMITS);

/** The checks `InMemoryWorkflowStore` makes before it changes anything. */
export const IN_MEMORY_INPUT = new SqlStoreInput('InMemoryWorkflowStore', IN_MEMORY_KEY_LIMITS, POSTGRES_JOURNAL_KEY_BYTES);
