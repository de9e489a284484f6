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
    /** The ids, the statuses, before: those still finished, in those statuses, and not children of an unfinished parent. */
    purgeInstances: (ids: number, statuses: number) =>
      `DELETE i FROM ${instances} i LEFT JOIN ${instances} p ON p.id = i.parent_id AND p.status IN ${UNFINISHED}
  WHERE i.id IN (${placeholders(ids)}) AND i.status IN ${FINISHED} AND i.status IN (${placeholders(statuses)}) AND i.updated_at < ? AND p.id IS NULL`,
    /** before, the newest id, the child-ended signal's name, limit: the ids of old signals. */
    oldSignals: `SELECT g.id FROM ${signals} g WHERE g.created_at < ? AND g.id < ?
  AND (g.name <> ? OR NOT COALESCE((SELECT p.status IN ${UNFINISHED}
    FROM ${instances} c JOIN ${instances} p ON p.id = c.parent_id WHERE c.id = g.\`key\`), false))
ORDER BY g.id LIMIT ?`,
    /** The child-ended signal's name, then the ids. */
    purgeSignals: (ids: number) =>
      `DELETE g FROM ${signals} g LEFT JOIN ${instances} c ON g.name = ? AND c.id = g.\`key\`
  LEFT JOIN ${instances} p ON p.id = c.parent_id AND p.status IN ${UNFINISHED}
  WHERE g.id IN (${placeholders(ids)}) AND p.id IS NULL`,
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
   * Two statements, as MySQL refuses a DELETE whose subquery reads its own table: the ids (a
   * plain read, locking nothing), then the delete, which re-checks status and updated_at on the
   * rows so a reopened instance stays. The read walks instances_finished (status, updated_at, and
   * the id InnoDB appends) in order for each status and stops at `limit`, merging the few rows it
   * took; the parent's status is a scalar subquery, one primary-key probe per candidate child. One
   * range over every listed status would read and sort every old finished instance each batch.
   *
   * The delete checks each child's parent again, by a join that locks the parent's row (InnoDB
   * reads the tables a DELETE joins with locking reads, of the newest committed version): a reopen
   * of the parent holds that row from its check of the children to its commit, so the delete
   * waits for it and then finds the parent unfinished, and keeps the child the reopened parent
   * waits for. The plain read saw the parent finished before that commit. Lock order: the delete
   * locks children and their parents in the order it reads them, so two purges (or a purge and a
   * `delete()`) may deadlock; InnoDB rolls one statement back at once, and it runs again.
   */
  async purgeInstances(executor: SqlExecutor, statuses: WorkflowStatus[], query: WorkflowPurgeQuery): Promise<number> {
    const { rows } = await executor.query(this.sql.oldestFinished(statuses.length), [
      ...statuses.flatMap((status) => [status, query.before, query.limit]),
      query.limit,
    ]);
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as string);
    const deleted = await retryOnLockContention(() =>
      executor.query(this.sql.purgeInstances(ids.length, statuses.length), [...ids, ...statuses, query.before]),
    );
    return deleted.rowCount;
  }

  /**
   * Never the newest signal, so the last id never goes back; never a child's end while the child's
   * parent is unfinished (a scalar subquery: two primary-key probes per such candidate, never a
   * materialized set). The ids are read first, a plain read: a DELETE reading `instances` in a
   * subquery would lock every row it reads. The delete then checks the parent of each child whose
   * end it takes again, by a join that locks the child's and the parent's rows, as
   * `purgeInstances()` does and for the same reason: a reopen of the parent in progress is waited for.
   */
  async purgeSignals(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    const newest = await this.signals.lastId(executor);
    const { rows } = await executor.query(this.sql.oldSignals, [query.before, newest, CHILD_ENDED_SIGNAL, query.limit]);
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as number | string);
    const deleted = await retryOnLockContention(() =>
      executor.query(this.sql.purgeSignals(ids.length), [CHILD_ENDED_SIGNAL, ...ids]),
    );
    return deleted.rowCount;
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
