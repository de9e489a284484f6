import type { SqlExecutor } from './sql-executor.js';
import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';

/**
 * A SQL dialect's `changeMany()`: the page's statements on `tx`, a transaction (the store's own, or
 * the application's), so the page's changes and its notices commit together.
 */
export interface SqlBulkChanges {
  /** The page in a transaction of the store's own on `executor` (run again where the dialect's lock contention allows). */
  changeAlone(executor: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]>;
  /** The page's statements on `tx`, the application's transaction. */
  change(tx: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]>;
}
