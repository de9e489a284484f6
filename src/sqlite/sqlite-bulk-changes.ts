import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';
import { requestCancel } from './sqlite-operator-changes.js';
import { pauseInstance, resumeInstance } from './sqlite-pauses.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/**
 * `changeMany()` on SQLite: the single-instance change on each id, all in the caller's one write
 * transaction (one commit, one wake of the other processes' change feeds for the page). Each
 * cancel, terminate or pause of a leased instance leaves its row in the cancel requests' feed, as
 * the single changes do, so its holder hears of it by name.
 */
export function changeMany(
  sql: SqliteStatements,
  t: SqliteTables,
  ids: readonly string[],
  change: WorkflowBulkChange,
): string[] {
  return ids.filter((id) => {
    if (change.kind === 'cancel') return requestCancel(sql, t, id, change.request);
    if (change.kind === 'pause') return pauseInstance(sql, t, id, change.request);
    return resumeInstance(sql, t, id, change.now);
  });
}
