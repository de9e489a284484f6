import { STORE_KEY_LIMITS } from '../storage/key-limits.js';
import { StoreInput } from '../storage/store-input.js';

/**
 * The longest keys `MySqlWorkflowStore` keeps, in characters; the store checks every key it writes
 * against them and throws a `RangeError` naming the field before it writes anything (a lenient
 * server would otherwise cut an over-long key short). The columns are `VARCHAR` in utf8mb4, and an
 * InnoDB index entry holds at most 3,072 bytes, 4 per character: each key column is
 * `VARCHAR(255)` and the journal's primary key (instance id and entry name, 255 + 512 characters)
 * is 3,068 bytes. A signal's topic (name and key) is indexed by its SHA-256, so both fit whole.
 * The same limits as PostgreSQL's: an application moves between the stores without renaming.
 */
export const MYSQL_KEY_LIMITS: typeof STORE_KEY_LIMITS = STORE_KEY_LIMITS;

/** What `MySqlWorkflowStore` checks before it writes anything (see `StoreInput`). */
export const MYSQL_INPUT = new StoreInput('MySqlWorkflowStore', MYSQL_KEY_LIMITS);
