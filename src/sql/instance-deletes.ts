import type { SqlExecutor } from './sql-executor.js';
import { finishedOnly } from './status-lists.js';
import type { WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowPurgeQuery, WorkflowPurgeResult } from '../storage/workflow-store.js';

/**
 * A dialect's statements of `delete()` and `purge()`, which `deleteInstance()` and `purgeStore()`
 * run. Each resolves to the rows it deleted, and never takes a child (or a child's end) whose
 * parent is unfinished or being reopened.
 */
export interface DeleteStatements {
  /** The instance `id`, while its status is one of `statuses` (never empty). */
  deleteInstance(executor: SqlExecutor, id: string, statuses: readonly WorkflowStatus[]): Promise<number>;
  /** Up to `limit` instances in `statuses` (finished ones, never empty) that ended before `before`. */
  purgeInstances(executor: SqlExecutor, statuses: WorkflowStatus[], query: WorkflowPurgeQuery): Promise<number>;
  /** Up to `limit` signals sent before `before`, never the newest. */
  purgeSignals(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number>;
  /** Up to `limit` rate windows that ended before `before`. */
  purgeRateWindows(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number>;
  /**
   * Up to `limit` debounce keys whose instance has started (`runs > 0`) or is gone, each deleted
   * only while it still names the instance checked (see `WorkflowStore.purge()`).
   */
  purgeDebounceKeys(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number>;
  /** What else the store keeps that a purge clears, unreported (MySQL's idle lock rows). */
  purgeHousekeeping?(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<void>;
}

/** `WorkflowStore.delete()` on a SQL store: `false` at once when no status is allowed. */
export async function deleteInstance(
  executor: SqlExecutor,
  statements: DeleteStatements,
  id: string,
  statuses: readonly WorkflowStatus[],
): Promise<boolean> {
  if (statuses.length === 0) return false;
  return (await statements.deleteInstance(executor, id, statuses)) > 0;
}

/**
 * `WorkflowStore.purge()` on a SQL store: finished instances, old signals, ended rate windows and
 * the debounce keys of started instances, each part a statement (or transaction) of its own, then the housekeeping. Unfinished instances
 * are never purged, whatever `statuses` says.
 */
export async function purgeStore(
  executor: SqlExecutor,
  statements: DeleteStatements,
  query: WorkflowPurgeQuery,
): Promise<WorkflowPurgeResult> {
  const statuses = finishedOnly(query.statuses);
  const instances = statuses.length === 0 ? 0 : await statements.purgeInstances(executor, statuses, query);
  const signals = await statements.purgeSignals(executor, query);
  const rateLimits = await statements.purgeRateWindows(executor, query);
  const debounceKeys = await statements.purgeDebounceKeys(executor, query);
  await statements.purgeHousekeeping?.(executor, query);
  return { instances, signals, rateLimits, debounceKeys };
}
