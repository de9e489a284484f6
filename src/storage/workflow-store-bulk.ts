// The bulk side of `WorkflowStore`: one page of a bulk action (`cancelMany()`, `pauseMany()`...)
// in one transaction, instead of one commit per instance.

import type { WorkflowCancelRequest } from './workflow-store-instances.js';
import type { WorkflowPauseRequest } from './workflow-store-pauses.js';

/**
 * What `changeMany()` does to each instance of a page: exactly what the single-instance method does
 * to one (`requestCancel()`, `pause()`, `resume()`), under the same conditions.
 */
export type WorkflowBulkChange =
  | { kind: 'cancel'; request: WorkflowCancelRequest }
  | { kind: 'pause'; request: WorkflowPauseRequest }
  | { kind: 'resume'; now: number };

/** The most ids one `changeMany()` takes: a page is one short transaction, never a long one. */
export const BULK_CHANGE_LIMIT = 500;

/** Bulk changes, on every store we ship (optional for a store of your own: the client then asks one instance at a time). */
export interface WorkflowBulkStore {
  /**
   * Applies `change` to each of `ids` (distinct, at most `BULK_CHANGE_LIMIT`) as the single-instance
   * method would, all in one transaction: each instance is checked and changed under its row lock,
   * so an instance whose status moves meanwhile (it ends, it is claimed) is changed or left exactly
   * as one `requestCancel()` / `pause()` / `resume()` would leave it, and a repeat changes nothing.
   * Resolves to the ids it changed, in any order (unknown ids, and instances the change does not
   * apply to, are left out).
   *
   * The holders of leases hear of it as of the single changes, but per page, not per instance: a
   * cancel, terminate or pause of a leased instance reaches its holder's `listen()` named (`'cancel'`
   * with its id) or as one notice the holders answer by reading their flags (`'cancel'` without an
   * id), sent at the commit; every listener looks for work when something became due.
   */
  changeMany?(ids: readonly string[], change: WorkflowBulkChange): Promise<string[]>;

  /**
   * Optional: `changeMany()` inside the application's transaction (`cancelMany(filter, {
   * transaction })`), under the rules of `createInTransaction()`: it commits or rolls back with it,
   * and its notices are sent at that commit.
   */
  changeManyInTransaction?(transaction: unknown, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]>;
}

/**
 * Throws a `RangeError` when `ids` is longer than `BULK_CHANGE_LIMIT` (a caller's bug: a page is
 * bounded so that its transaction stays short), before anything is written.
 */
export function checkBulkIds(ids: readonly string[]): void {
  if (ids.length > BULK_CHANGE_LIMIT)
    throw new RangeError(
      `changeMany() was given ${ids.length} ids; it takes at most ${BULK_CHANGE_LIMIT}. Split them into pages.`,
    );
}
