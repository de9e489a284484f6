import { retryOnLockContention } from './mysql-retry.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import type { SqlBulkChanges } from '../sql/bulk-changes.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { CANCELLABLE, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';

/** Which rows of a page each change applies to, as the single-instance statements check it. */
function applies(change: WorkflowBulkChange): string {
  if (change.kind === 'resume') return `status IN ${UNFINISHED} AND paused = 1`;
  if (change.kind === 'pause') return `status IN ${UNFINISHED} AND paused = 0`;
  return change.request.terminate
    ? `status IN ${UNFINISHED} AND terminate_requested = 0`
    : `status IN ${CANCELLABLE} AND cancel_requested = 0`;
}

/**
 * `changeMany()` on MySQL: a locking read of the page's rows the change applies to (in id order, so
 * two bulk actions never wait for each other in a cycle), one UPDATE of exactly those, and, when
 * one of them was leased, one step of the cancel counter (`cancel_notices`): the holders' wake-up
 * poll sees it move and reads the flags of what they hold, as after a single cancel. (A multi-table
 * UPDATE would step the counter once whichever instance it met first, so it is its own statement.)
 * A cancel's `wake_at` of now moves the wake-up marker for every process, as a single cancel's does.
 */
export class MySqlBulkChanges implements SqlBulkChanges {
  constructor(private readonly tables: MySqlTables) {}

  changeAlone(executor: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    return retryOnLockContention(() => executor.transaction((tx) => this.change(tx, ids, change)));
  }

  async change(tx: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    if (ids.length === 0) return [];
    const { instances, cancelNotices } = this.tables;
    const { rows } = await tx.query(
      `SELECT id, lease_token IS NOT NULL AS leased FROM ${instances}
WHERE id IN (${placeholders(ids.length)}) AND ${applies(change)} ORDER BY id FOR UPDATE`,
      [...ids],
    );
    if (rows.length === 0) return [];
    const changed = rows.map((row) => String(row.id));
    const { set, params } = assignments(change);
    await tx.query(`UPDATE ${instances} SET ${set} WHERE id IN (${placeholders(changed.length)})`, [
      ...params,
      ...changed,
    ]);
    if (change.kind !== 'resume' && rows.some((row) => Number(row.leased) === 1))
      await tx.query(`UPDATE ${cancelNotices} SET seq = seq + 1 WHERE id = 1`, []);
    return changed;
  }
}

/** What each change sets, as the single-instance statements set it. */
function assignments(change: WorkflowBulkChange): { set: string; params: unknown[] } {
  if (change.kind === 'resume') return { set: 'paused = 0, pause_reason = NULL, updated_at = ?', params: [change.now] };
  const { reason, now } = change.request;
  if (change.kind === 'pause') return { set: 'paused = 1, pause_reason = ?, updated_at = ?', params: [reason, now] };
  // As requestCancel(): a paused instance is cancelled as it stands, and is due now.
  const flags = change.request.terminate ? 'cancel_requested = 1, terminate_requested = 1' : 'cancel_requested = 1';
  return {
    set:
      `${flags}, cancel_reason = ?, paused = 0, pause_reason = NULL, ` +
      'wake_at = CASE WHEN wake_at IS NOT NULL AND wake_at <= ? THEN wake_at ELSE ? END, updated_at = ?',
    params: [reason, now, now, now],
  };
}
