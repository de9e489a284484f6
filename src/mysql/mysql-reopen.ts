import { journalRows, upsertJournal, type JournalRow } from './mysql-journal.js';
import { topicHash } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import type { ReopenStatements } from '../sql/reopen.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { FINISHED } from '../sql/status-lists.js';
import { toJson } from '../sql/workflow-rows.js';
import { FINISHED_STATUSES, type WorkflowJournalEntry, type WorkflowStatus } from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowReopen } from '../storage/workflow-store.js';

const KEEPS_CANCEL = "(cancel_requested = 1 AND terminate_requested = 0 AND ? = 'compensating')";

/**
 * `reopen()`'s assignments of the cancel flags, taking the new status twice: a cancel (not a
 * terminate) stays requested, with its reason, when the instance reopens to `compensating`, since
 * its compensations are still the cancel's. Each expression reads only columns assigned after it,
 * so the result is the same whether the server assigns left to right (MySQL) or all at once
 * (MariaDB's SIMULTANEOUS_ASSIGNMENT mode).
 */
const REOPEN_CANCEL_FLAGS = `cancel_reason = IF(${KEEPS_CANCEL}, cancel_reason, NULL), cancel_requested = ${KEEPS_CANCEL}, terminate_requested = 0`;

/** `reopen()`'s statements for the store's tables. */
function reopenStatements({ instances, signals }: MySqlTables) {
  return {
    /** id, expected status, expected runs, now: the reopen's conditions, locking the row when they hold. */
    lockReopen: `SELECT id FROM ${instances} WHERE id = ? AND status = ? AND runs = ? AND NOT (lease_token IS NOT NULL AND lease_until >= ?) FOR UPDATE`,
    /** status, error, (deadline,) status twice (`REOPEN_CANCEL_FLAGS`), now twice, id: on the locked row. */
    reopen: (withDeadline: boolean) =>
      `UPDATE ${instances} SET status = ?, error = ?${withDeadline ? ', deadline = ?' : ''}, ${REOPEN_CANCEL_FLAGS},
  lease_token = NULL, lease_until = NULL, wake_at = ?, updated_at = ? WHERE id = ?`,
    /** The children's ids: their statuses. */
    children: (count: number) => `SELECT id, status FROM ${instances} WHERE id IN (${placeholders(count)})`,
    /** Finished children's ids: those still finished, held in share mode (by primary key alone) until the reopen commits. */
    holdFinished: (count: number) =>
      `SELECT id FROM ${instances} FORCE INDEX (PRIMARY) WHERE id IN (${placeholders(count)}) AND status IN ${FINISHED} LOCK IN SHARE MODE`,
    /**
     * The topic hashes of finished children's ends: those stored, held in share mode until the
     * reopen commits. `name` is not in `signals_topic`, so the read visits each row and locks it
     * there too (a share lock on the index entry alone would not hold off purge's lock of the row).
     */
    ends: (count: number) =>
      `SELECT topic_hash, name FROM ${signals} WHERE topic_hash IN (${placeholders(count)}) LOCK IN SHARE MODE`,
    /** name, dedupe id: the signal the reopen retracts. */
    retract: `DELETE FROM ${signals} WHERE name = ? AND dedupe_id = ?`,
  };
}

/** A reopen's journal rows and error (JSON text), made before the transaction. */
interface MySqlReopenValues {
  rows: JournalRow[];
  error: string | null;
}

/**
 * `reopen()` on MySQL (see `reopenInstance()`): always in a transaction of its own, retried on lock
 * contention. The locking read checks the conditions; the update, the journal upsert and the
 * retraction then run on the locked row.
 */
export class MySqlReopen implements ReopenStatements<MySqlReopenValues> {
  readonly conditional = false;
  private readonly sql: ReturnType<typeof reopenStatements>;

  constructor(private readonly tables: MySqlTables) {
    this.sql = reopenStatements(tables);
  }

  encode(id: string, reopen: WorkflowReopen, entries: readonly WorkflowJournalEntry[]): MySqlReopenValues {
    return { rows: journalRows(id, entries), error: toJson(reopen.error) };
  }

  transaction<T>(executor: SqlExecutor, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return retryOnLockContention(() => executor.transaction(fn));
  }

  async lock(tx: SqlExecutor, id: string, reopen: WorkflowReopen): Promise<boolean> {
    const { rows } = await tx.query(this.sql.lockReopen, [id, reopen.expect.status, reopen.expect.runs, reopen.now]);
    return rows.length > 0;
  }

  /**
   * The finished children and their ends are held in share mode until the reopen commits: purge()
   * locks what it deletes and passes over what another transaction holds, and checks the parent
   * only with a plain read, so it must not take them while this reopen is on its way (it locks no
   * parent, never an unfinished instance). A child a purge took first shows here as gone.
   */
  async childrenReachable(tx: SqlExecutor, children: readonly string[]): Promise<boolean> {
    const { rows } = await tx.query(this.sql.children(children.length), [...children]);
    if (rows.length < children.length) return false;
    const finished = rows
      .filter((row) => FINISHED_STATUSES.includes(row.status as WorkflowStatus))
      .map((row) => String(row.id));
    if (finished.length === 0) return true;
    const { rows: heldRows } = await tx.query(this.sql.holdFinished(finished.length), finished);
    const held = new Set(heldRows.map((row) => String(row.id)));
    const others = finished.filter((id) => !held.has(id));
    if (others.length > 0) {
      // Gone since the read (refuse), or reopened itself (unfinished, so it needs no end): read again.
      const { rows: again } = await tx.query(this.sql.children(others.length), others);
      if (again.length < others.length || again.some((row) => FINISHED_STATUSES.includes(row.status as WorkflowStatus)))
        return false;
    }
    if (held.size === 0) return true;
    const ended = [...held].map((id) => topicHash(CHILD_ENDED_SIGNAL, id));
    const ends = await tx.query(this.sql.ends(ended.length), ended);
    const found = new Set(ends.rows.map((row) => Buffer.from(row.topic_hash as Uint8Array).toString('hex')));
    return ended.every((hash) => found.has(hash.toString('hex')));
  }

  async apply(tx: SqlExecutor, id: string, reopen: WorkflowReopen, values: MySqlReopenValues): Promise<boolean> {
    const withDeadline = reopen.deadline !== undefined;
    await tx.query(this.sql.reopen(withDeadline), [
      reopen.status,
      values.error,
      ...(withDeadline ? [reopen.deadline] : []),
      reopen.status,
      reopen.status,
      reopen.now,
      reopen.now,
      id,
    ]);
    await upsertJournal(tx, this.tables.journal, values.rows);
    const retract = reopen.retractSignal;
    if (retract) await tx.query(this.sql.retract, [retract.name, retract.dedupeId]);
    return true;
  }
}
