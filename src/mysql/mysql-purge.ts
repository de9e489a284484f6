import type { SqlExecutor } from '../sql/sql-executor.js';
import { FINISHED, finishedOnly, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowPurgeQuery, WorkflowPurgeResult } from '../storage/workflow-store.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { MySqlLocks } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlSignals } from './mysql-signals.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';

/**
 * `MySqlWorkflowStore.purge()`: finished instances, old signals, ended rate windows and idle lock
 * rows, each part on its own. A child whose parent is unfinished, and that child's end (the
 * `$child-ended` signal keyed by its id), stay: the parent may not have taken that end yet.
 */
export class MySqlPurge {
  constructor(
    private readonly tables: MySqlTables,
    private readonly signalsOf: MySqlSignals,
    private readonly locks: MySqlLocks,
  ) {}

  async purge(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    const instances = await this.instances(executor, query);
    const signals = await this.signals(executor, query);
    const rateLimits = await this.rateWindows(executor, query);
    // Lock rows no transaction holds, up to `limit` a call (see MySqlLocks.purge): one per signal
    // topic ever used would otherwise stay forever. Housekeeping, not reported.
    await retryOnLockContention(() => this.locks.purge(executor, query.limit));
    return { instances, signals, rateLimits };
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
  private async instances(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    const { instances } = this.tables;
    const statuses = finishedOnly(query.statuses);
    if (statuses.length === 0) return 0;
    const oldest = `(SELECT i.id, i.updated_at FROM ${instances} i WHERE i.status = ? AND i.updated_at < ?
  AND (i.parent_id IS NULL OR NOT COALESCE((SELECT p.status IN ${UNFINISHED} FROM ${instances} p WHERE p.id = i.parent_id), false))
  ORDER BY i.updated_at, i.id LIMIT ?)`;
    const { rows } = await executor.query(
      `SELECT id FROM (${statuses.map(() => oldest).join(' UNION ALL ')}) o ORDER BY updated_at, id LIMIT ?`,
      [...statuses.flatMap((status) => [status, query.before, query.limit]), query.limit],
    );
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as string);
    const deleted = await retryOnLockContention(() =>
      executor.query(
        `DELETE i FROM ${instances} i LEFT JOIN ${instances} p ON p.id = i.parent_id AND p.status IN ${UNFINISHED}
  WHERE i.id IN (${placeholders(ids.length)}) AND i.status IN ${FINISHED} AND i.status IN (${placeholders(statuses.length)}) AND i.updated_at < ? AND p.id IS NULL`,
        [...ids, ...statuses, query.before],
      ),
    );
    return deleted.rowCount;
  }

  /**
   * Never the newest signal, so the last id never goes back; never a child's end while the child's
   * parent is unfinished (a scalar subquery: two primary-key probes per such candidate, never a
   * materialized set). The ids are read first, a plain read: a DELETE reading `instances` in a
   * subquery would lock every row it reads. The delete then checks the parent of each child whose
   * end it takes again, by a join that locks the child's and the parent's rows, as `instances()`
   * does and for the same reason: a reopen of the parent in progress is waited for.
   */
  private async signals(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    const { signals, instances } = this.tables;
    const newest = await this.signalsOf.lastId(executor);
    const { rows } = await executor.query(
      `SELECT g.id FROM ${signals} g WHERE g.created_at < ? AND g.id < ?
  AND (g.name <> ? OR NOT COALESCE((SELECT p.status IN ${UNFINISHED}
    FROM ${instances} c JOIN ${instances} p ON p.id = c.parent_id WHERE c.id = g.\`key\`), false))
ORDER BY g.id LIMIT ?`,
      [query.before, newest, CHILD_ENDED_SIGNAL, query.limit],
    );
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id as number | string);
    const deleted = await retryOnLockContention(() =>
      executor.query(
        `DELETE g FROM ${signals} g LEFT JOIN ${instances} c ON g.name = ? AND c.id = g.\`key\`
  LEFT JOIN ${instances} p ON p.id = c.parent_id AND p.status IN ${UNFINISHED}
  WHERE g.id IN (${placeholders(ids.length)}) AND p.id IS NULL`,
        [CHILD_ENDED_SIGNAL, ...ids],
      ),
    );
    return deleted.rowCount;
  }

  /** Ended windows, passing over those a claim holds; window_end re-checked. */
  private rateWindows(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    const { rateWindows } = this.tables;
    return retryOnLockContention(() =>
      executor.transaction(async (tx) => {
        const { rows } = await tx.query(
          `SELECT workflow, has_key, \`key\` FROM ${rateWindows} WHERE window_end < ? ORDER BY window_end LIMIT ? FOR UPDATE SKIP LOCKED`,
          [query.before, query.limit],
        );
        if (rows.length === 0) return 0;
        const { rowCount } = await tx.query(
          `DELETE FROM ${rateWindows} WHERE (workflow, has_key, \`key\`) IN (${rows.map(() => '(?, ?, ?)').join(', ')}) AND window_end < ?`,
          [...rows.flatMap((row) => [row.workflow, row.has_key, row.key]), query.before],
        );
        return rowCount;
      }),
    );
  }
}
