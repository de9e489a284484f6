import type { MySqlLocks } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlSignals } from './mysql-signals.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import type { DeleteStatements } from '../sql/instance-deletes.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { FINISHED, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowStatus } from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowPurgeQuery } from '../storage/workflow-store.js';

/** `delete()`'s and `purge()`'s statements for the store's tables. */
function deleteStatements({ instances, signals, rateWindows, debounceKeys }: MySqlTables) {
  const oldest = `(SELECT i.id, i.updated_at FROM ${instances} i WHERE i.status = ? AND i.updated_at < ?
  AND (i.parent_id IS NULL OR NOT COALESCE((SELECT p.status IN ${UNFINISHED} FROM ${instances} p WHERE p.id = i.parent_id), false))
  ORDER BY i.updated_at, i.id LIMIT ?)`;
  return {
    /**
     * id, then each of `statuses`. Never a child whose parent is unfinished; a join, as MySQL
     * refuses a subquery on the table a DELETE deletes from.
     */
    deleteInstance: (statuses: number) =>
      `DELETE i FROM ${instances} i LEFT JOIN ${instances} p ON p.id = i.parent_id AND p.status IN ${UNFINISHED}
  WHERE i.id = ? AND i.status IN (${placeholders(statuses)}) AND p.id IS NULL`,
    /** (status, before, limit) for each status, then limit: the oldest finished instances' ids. */
    oldestFinished: (statuses: number) =>
      `SELECT id FROM (${Array.from({ length: statuses }, () => oldest).join(' UNION ALL ')}) o ORDER BY updated_at, id LIMIT ?`,
    /**
     * The ids, the statuses, before: those still finished, in those statuses, locked by primary key
     * (passing over rows another transaction holds), with their parents' ids. By primary key alone,
     * also on a small table where a scan would be cheaper: a scan would lock every row it reads.
     */
    lockFinished: (ids: number, statuses: number) =>
      `SELECT id, parent_id FROM ${instances} FORCE INDEX (PRIMARY)
  WHERE id IN (${placeholders(ids)}) AND status IN ${FINISHED} AND status IN (${placeholders(statuses)}) AND updated_at < ?
  FOR UPDATE SKIP LOCKED`,
    /** The ids: those unfinished (a plain read, locking nothing). */
    unfinished: (ids: number) =>
      `SELECT id FROM ${instances} FORCE INDEX (PRIMARY) WHERE id IN (${placeholders(ids)}) AND status IN ${UNFINISHED}`,
    /** The ids, which the transaction holds. */
    deleteInstances: (ids: number) =>
      `DELETE i FROM ${instances} i FORCE INDEX (PRIMARY) WHERE i.id IN (${placeholders(ids)})`,
    /** before, the newest id, the child-ended signal's name, limit: the ids of old signals. */
    oldSignals: `SELECT g.id FROM ${signals} g WHERE g.created_at < ? AND g.id < ?
  AND (g.name <> ? OR NOT COALESCE((SELECT p.status IN ${UNFINISHED}
    FROM ${instances} c JOIN ${instances} p ON p.id = c.parent_id WHERE c.id = g.\`key\`), false))
ORDER BY g.id LIMIT ?`,
    /** The ids: the signals still there, locked by primary key (passing over rows another transaction holds). */
    lockSignals: (ids: number) =>
      `SELECT id, name, \`key\` FROM ${signals} FORCE INDEX (PRIMARY) WHERE id IN (${placeholders(ids)}) FOR UPDATE SKIP LOCKED`,
    /** The ids of children: those whose parent is unfinished (a plain read, locking nothing). */
    childrenOfUnfinished: (ids: number) =>
      `SELECT c.id FROM ${instances} c FORCE INDEX (PRIMARY) JOIN ${instances} p ON p.id = c.parent_id
  WHERE c.id IN (${placeholders(ids)}) AND p.status IN ${UNFINISHED}`,
    /** The ids, which the transaction holds. */
    deleteSignals: (ids: number) =>
      `DELETE g FROM ${signals} g FORCE INDEX (PRIMARY) WHERE g.id IN (${placeholders(ids)})`,
    /** before, limit: ended windows, locked, passing over those a claim holds. */
    endedWindows: `SELECT workflow, has_key, \`key\` FROM ${rateWindows} WHERE window_end < ? ORDER BY window_end LIMIT ? FOR UPDATE SKIP LOCKED`,
    /** (workflow, has_key, key) of each window, then before. */
    purgeRateWindows: (windows: number) =>
      `DELETE FROM ${rateWindows} WHERE (workflow, has_key, \`key\`) IN (${Array.from({ length: windows }, () => '(?, ?, ?)').join(', ')}) AND window_end < ?`,
    /** limit: the debounce keys whose instance has started or is gone (a plain read: no locks). */
    idleDebounceKeys: `SELECT d.workflow, d.debounce_key, d.instance_id FROM ${debounceKeys} d
  WHERE NOT EXISTS (SELECT 1 FROM ${instances} i WHERE i.id = d.instance_id AND i.runs = 0) LIMIT ?`,
    /**
     * (workflow, key, instance id) of each: those keys, locked while they still name that instance
     * (a locking read sees the latest row), passing over those a debounced create holds.
     */
    lockDebounceKeys: (keys: number) =>
      `SELECT workflow, debounce_key FROM ${debounceKeys} WHERE (workflow, debounce_key, instance_id) IN (${Array.from({ length: keys }, () => '(?, ?, ?)').join(', ')}) FOR UPDATE SKIP LOCKED`,
    /** (workflow, key) of each locked key. */
    purgeDebounceKeys: (keys: number) =>
      `DELETE FROM ${debounceKeys} WHERE (workflow, debounce_key) IN (${Array.from({ length: keys }, () => '(?, ?)').join(', ')})`,
  };
}

/**
 * `delete()` and `purge()` on MySQL (see `deleteInstance()` and `purgeStore()`): finished
 * instances, old signals, ended rate windows and idle lock rows, each part on its own. A child
 * whose parent is unfinished, and that child's end (the `$child-ended` signal keyed by its id),
 * stay: the parent may not have taken that end yet.
 */
export class MySqlDeletes implements DeleteStatements {
  private readonly sql: ReturnType<typeof deleteStatements>;

  constructor(
    tables: MySqlTables,
    private readonly signals: MySqlSignals,
    private readonly locks: MySqlLocks,
  ) {
    this.sql = deleteStatements(tables);
  }

  async deleteInstance(executor: SqlExecutor, id: string, statuses: readonly WorkflowStatus[]): Promise<number> {
    const { rowCount } = await retryOnLockContention(() =>
      executor.query(this.sql.deleteInstance(statuses.length), [id, ...statuses]),
    );
    return rowCount;
  }

  /**
   * The ids first (a plain read, locking nothing), then a transaction that locks and deletes only
   * rows it read by primary key, so it never locks an unfinished instance (a claim passes over
   * rows another transaction holds, and would leave a due one until its next poll): it locks the
   * candidates still finished (`FOR UPDATE SKIP LOCKED`: it never waits, so it never deadlocks),
   * reads their parents' statuses with a plain read (the newest committed, under READ COMMITTED),
   * and deletes the locked ones whose parent is not unfinished. The read walks instances_finished
   * (status, updated_at, and the id InnoDB appends) in order for each status and stops at `limit`,
   * merging the few rows it took; the parent's status is a scalar subquery, one primary-key probe
   * per candidate child. One range over every listed status would read and sort every old
   * finished instance each batch.
   *
   * Against a reopen of a parent (retry()), which locks the parent's row, then holds its finished
   * children in share mode while it checks them, until it commits (`MySqlReopen`): a child the
   * reopen holds is passed over; one this purge locked first makes the reopen wait, then find it
   * gone and refuse; and once the reopen committed, this purge reads the parent unfinished and
   * keeps the child. Either way no reopened parent waits for a child that is gone.
   */
  async purgeInstances(executor: SqlExecutor, statuses: WorkflowStatus[], query: WorkflowPurgeQuery): Promise<number> {
    const { rows } = await executor.query(this.sql.oldestFinished(statuses.length), [
      ...statuses.flatMap((status) => [status, query.before, query.limit]),
      query.limit,
    ]);
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as string);
    return retryOnLockContention(() =>
      executor.transaction(async (tx) => {
        const { rows: locked } = await tx.query(this.sql.lockFinished(ids.length, statuses.length), [
          ...ids,
          ...statuses,
          query.before,
        ]);
        const parents = [...new Set(locked.flatMap((row) => (row.parent_id === null ? [] : [String(row.parent_id)])))];
        const waiting = new Set<string>();
        if (parents.length > 0) {
          const { rows: unfinished } = await tx.query(this.sql.unfinished(parents.length), parents);
          for (const row of unfinished) waiting.add(String(row.id));
        }
        const doomed = locked
          .filter((row) => row.parent_id === null || !waiting.has(String(row.parent_id)))
          .map((row) => String(row.id));
        if (doomed.length === 0) return 0;
        const { rowCount } = await tx.query(this.sql.deleteInstances(doomed.length), doomed);
        return rowCount;
      }),
    );
  }

  /**
   * Never the newest signal, so the last id never goes back; never a child's end while the child's
   * parent is unfinished (a scalar subquery: two primary-key probes per such candidate, never a
   * materialized set). The ids are read first, a plain read: a DELETE reading `instances` in a
   * subquery would lock every row it reads. Then, as `purgeInstances()` does and for the same
   * reason (a reopen of the parent holds the child's end in share mode until it commits), a
   * transaction locks the signals by primary key (`SKIP LOCKED`), checks the parent of each child
   * whose end it holds with a plain read, and deletes the others: it locks no instance.
   */
  async purgeSignals(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    const newest = await this.signals.lastId(executor);
    const { rows } = await executor.query(this.sql.oldSignals, [query.before, newest, CHILD_ENDED_SIGNAL, query.limit]);
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as number | string);
    return retryOnLockContention(() =>
      executor.transaction(async (tx) => {
        const { rows: locked } = await tx.query(this.sql.lockSignals(ids.length), ids);
        const children = [
          ...new Set(
            locked.flatMap((row) => (row.name === CHILD_ENDED_SIGNAL && row.key !== null ? [String(row.key)] : [])),
          ),
        ];
        const awaited = new Set<string>();
        if (children.length > 0) {
          const { rows: kept } = await tx.query(this.sql.childrenOfUnfinished(children.length), children);
          for (const row of kept) awaited.add(String(row.id));
        }
        const doomed = locked
          .filter((row) => !(row.name === CHILD_ENDED_SIGNAL && awaited.has(String(row.key))))
          .map((row) => row.id as number | string);
        if (doomed.length === 0) return 0;
        const { rowCount } = await tx.query(this.sql.deleteSignals(doomed.length), doomed);
        return rowCount;
      }),
    );
  }

  /** Ended windows, passing over those a claim holds; window_end re-checked. */
  purgeRateWindows(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    return retryOnLockContention(() =>
      executor.transaction(async (tx) => {
        const { rows } = await tx.query(this.sql.endedWindows, [query.before, query.limit]);
        if (rows.length === 0) return 0;
        const { rowCount } = await tx.query(this.sql.purgeRateWindows(rows.length), [
          ...rows.flatMap((row) => [row.workflow, row.has_key, row.key]),
          query.before,
        ]);
        return rowCount;
      }),
    );
  }

  /**
   * The debounce keys of started or gone instances: read without locks, then locked only while
   * they still name the instance read (a create that pointed one at a new burst's instance since
   * the read keeps it), then deleted, in one transaction.
   */
  purgeDebounceKeys(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    return retryOnLockContention(() =>
      executor.transaction(async (tx) => {
        const idle = (await tx.query(this.sql.idleDebounceKeys, [query.limit])).rows;
        if (idle.length === 0) return 0;
        const { rows } = await tx.query(
          this.sql.lockDebounceKeys(idle.length),
          idle.flatMap((row) => [row.workflow, row.debounce_key, row.instance_id]),
        );
        if (rows.length === 0) return 0;
        const { rowCount } = await tx.query(
          this.sql.purgeDebounceKeys(rows.length),
          rows.flatMap((row) => [row.workflow, row.debounce_key]),
        );
        return rowCount;
      }),
    );
  }

  /**
   * Lock rows no transaction holds, up to `limit` a call (see `MySqlLocks.purge()`): one per signal
   * topic ever used would otherwise stay forever.
   */
  async purgeHousekeeping(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<void> {
    await retryOnLockContention(() => this.locks.purge(executor, query.limit));
  }
}
