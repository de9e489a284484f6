import type { SqlExecutor } from '../sql/sql-executor.js';
import type { DeleteStatements } from '../sql/instance-deletes.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import { FINISHED } from '../sql/status-lists.js';
import type { WorkflowStatus } from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowPurgeQuery } from '../storage/workflow-store.js';

/**
 * Whether a child (or its end) may be deleted as far as its parent is concerned, the parent `p`
 * found by `from` (`<instances> p WHERE ...`): true when there is none or it is gone; when it is
 * finished, only once this statement holds it `FOR SHARE`. `reopen()` holds the parent's row
 * from its check of the children to its commit (`lockReopen` in postgres-reopen.ts): a delete or
 * purge that read the parent finished before that commit must not take a child the reopened
 * parent will wait for. The lock makes it wait for the reopen (`'wait'`) and then re-read the
 * parent (READ COMMITTED follows the row to its newest version and checks `status` again:
 * reopened, it no longer matches), or pass over the child while the row is held (`'skip'`). Only
 * finished parents are locked: claims and workers lock only unfinished rows, so they never meet
 * this lock.
 */
function parentLetsGo(s: string, from: string, held: 'wait' | 'skip'): string {
  return `COALESCE((SELECT (SELECT true FROM ${s}.instances q WHERE q.id = p.id AND q.status IN ${FINISHED}
      FOR SHARE${held === 'skip' ? ' SKIP LOCKED' : ''}) IS NOT NULL FROM ${from}), true)`;
}

/** `delete()`'s and `purge()`'s statements for a quoted schema. */
function deleteStatements(s: string) {
  return {
    /**
     * $1 id, $2 statuses. Never a child whose parent is unfinished (see `delete()` in the store
     * contract), nor one whose parent a reopen is moving (`parentLetsGo()`, waiting for it).
     */
    deleteInstance: `DELETE FROM ${s}.instances i WHERE i.id = $1 AND i.status = ANY($2::text[])
    AND (i.parent_id IS NULL OR ${parentLetsGo(s, `${s}.instances p WHERE p.id = i.parent_id`, 'wait')})`,

    /**
     * $1 statuses (finished ones), $2 before, $3 limit. Status and updated_at are re-checked on the
     * deleted rows. A child whose parent is unfinished stays (its end's signal is found through
     * it; replayed, a parent that didn't journal it would create it again), and so does one whose
     * parent another transaction holds (`parentLetsGo()`: a reopen may be moving it). The
     * parent's status is a scalar subquery: primary-key probes per candidate child under the walk
     * of instances_finished, which the planner can't turn into a hash of every unfinished
     * instance. The batch's ids are an array, deleted by key: an `IN (subquery)` with its `LIMIT` a
     * parameter is planned, generic, as a hash join over every finished instance before `$2`.
     *
     * It never waits for a row lock (`SKIP LOCKED`, for the candidates and for their parents), so
     * it is never part of a deadlock. Waiting, it would be: it share-locks parents before it
     * deletes, so two purges could each wait to delete a parent the other holds shared. Rows
     * another transaction holds are left for a later purge.
     */
    purgeInstances: `DELETE FROM ${s}.instances WHERE id = ANY (ARRAY(
  SELECT i.id FROM ${s}.instances i
  WHERE i.status IN ${FINISHED} AND i.status = ANY($1::text[]) AND i.updated_at < $2
    AND (i.parent_id IS NULL OR ${parentLetsGo(s, `${s}.instances p WHERE p.id = i.parent_id`, 'skip')})
  ORDER BY i.updated_at, i.id LIMIT $3 FOR UPDATE SKIP LOCKED
)) AND status IN ${FINISHED} AND status = ANY($1::text[]) AND updated_at < $2`,

    /**
     * $1 before, $2 limit. Never the newest signal, so the last id never goes back, nor a child's
     * end while the child's parent is unfinished or held (`parentLetsGo()`): primary-key probes
     * (child, parent) per such candidate, as a scalar subquery (an EXISTS is planned as a hash of
     * every child, per batch). The child's parent_id is a subquery of its own, on `c.id` alone, so
     * the partial index instances_parent (`WHERE parent_id IS NOT NULL`) can't serve it. Joined on
     * `p.id = c.parent_id`, which implies that predicate, the child was read from that index by a
     * condition on its last column, `id`, that reads all of it, whenever the statistics said it was
     * (nearly) empty: as until the first ANALYZE after an application starts child workflows. Then
     * the whole index was read for each candidate end (3.4 s a batch of 1,000 with 120,000
     * children, against 10 ms). As `purgeInstances`, it never waits for a row lock.
     */
    purgeSignals: `DELETE FROM ${s}.signals WHERE id = ANY (ARRAY(
  SELECT g.id FROM ${s}.signals g WHERE g.created_at < $1 AND g.id < (SELECT max(id) FROM ${s}.signals)
    AND (g.name <> '${CHILD_ENDED_SIGNAL}'
      OR ${parentLetsGo(s, `${s}.instances p WHERE p.id = (SELECT c.parent_id FROM ${s}.instances c WHERE c.id = g.key)`, 'skip')})
  ORDER BY g.id LIMIT $2 FOR UPDATE SKIP LOCKED
))`,

    /**
     * $1 before, $2 limit. Ended windows, passing over those a claim holds; window_end re-checked.
     * The batch is an array of rows, deleted by key (an array's rows are estimated at a few):
     * joined to a subquery with its `LIMIT`, the batch was planned, custom and generic, as a join
     * that read every window, or every ended one, on each batch, on tables of up to some hundreds
     * of thousands of windows (100,000: 37 ms a batch of 1,000, against 14 ms).
     */
    purgeRateWindows: `DELETE FROM ${s}.rate_windows r USING unnest(ARRAY(
  SELECT w FROM ${s}.rate_windows w WHERE w.window_end < $1
  ORDER BY w.window_end LIMIT $2 FOR UPDATE SKIP LOCKED
)) d WHERE r.workflow = d.workflow AND r.has_key = d.has_key AND r.key = d.key AND r.window_end < $1`,

    /**
     * $1 limit. The keys whose instance has started or is gone, as this statement's snapshot saw
     * them, then locked (passing over those a debounced create holds: it may run in an
     * application's long transaction) only while they still name that instance: a key a create
     * pointed at a new instance since the snapshot fails the lock's re-check of `instance_id`
     * (its candidate row is the snapshot's), so a new burst's row is never deleted.
     */
    purgeDebounceKeys: `WITH candidates AS (
  SELECT d.workflow, d.key, d.instance_id FROM ${s}.debounce_keys d
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.instances i WHERE i.id = d.instance_id AND i.runs = 0)
  LIMIT $1
), held AS (
  SELECT k.workflow, k.key FROM ${s}.debounce_keys k
  JOIN candidates c ON k.workflow = c.workflow AND k.key = c.key AND k.instance_id = c.instance_id
  FOR UPDATE OF k SKIP LOCKED
)
DELETE FROM ${s}.debounce_keys k USING held h WHERE k.workflow = h.workflow AND k.key = h.key`,
  };
}

/** `delete()` and `purge()` on PostgreSQL (see `deleteInstance()` and `purgeStore()`): one statement each. */
export class PostgresDeletes implements DeleteStatements {
  private readonly sql: ReturnType<typeof deleteStatements>;

  constructor(schema: string) {
    this.sql = deleteStatements(quoteIdentifier(schema));
  }

  async deleteInstance(executor: SqlExecutor, id: string, statuses: readonly WorkflowStatus[]): Promise<number> {
    return (await executor.query(this.sql.deleteInstance, [id, [...statuses]])).rowCount;
  }

  async purgeInstances(executor: SqlExecutor, statuses: WorkflowStatus[], query: WorkflowPurgeQuery): Promise<number> {
    return (await executor.query(this.sql.purgeInstances, [statuses, query.before, query.limit])).rowCount;
  }

  async purgeSignals(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    return (await executor.query(this.sql.purgeSignals, [query.before, query.limit])).rowCount;
  }

  async purgeRateWindows(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    return (await executor.query(this.sql.purgeRateWindows, [query.before, query.limit])).rowCount;
  }

  async purgeDebounceKeys(executor: SqlExecutor, query: WorkflowPurgeQuery): Promise<number> {
    return (await executor.query(this.sql.purgeDebounceKeys, [query.limit])).rowCount;
  }
}
