import { notifyDue } from './postgres-sql-fragments.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { UNFINISHED } from '../sql/status-lists.js';

/** `requestEndNotice()`'s statement for a quoted schema. */
function endNoticeStatements(s: string) {
  return {
    /**
     * $1 id, $2 now, $3 channel: asks that the instance's end be notified (`notifyEnded()`), while it
     * is unfinished. One row when it is; none when it is finished or unknown (then no notification
     * will come).
     *
     * Committed without waiting for the WAL flush (`synchronous_commit` off for this transaction
     * alone), so the row lock is held for microseconds, not through an fsync: a claim that meets
     * the locked row passes over it (SKIP LOCKED), and a result() awaited just after its start asks
     * while workers claim that very instance. Nothing depends on the flag outliving a server crash:
     * the LISTEN connection does not either, and a result() asks again after it reconnects. A later
     * commit that waits for its flush (the end's) flushes this one too.
     *
     * Passed over, a due instance could stay unclaimed: the wake-up that named it was spent on the
     * claim that skipped it, and the next comes with the poll (an hour away, if so configured). So
     * when the row it locked is due and free (no lease, `wake_at` reached), the ask names it again
     * (`due:<id>`), sent at its commit, once the row lock is gone: a claim that skipped the row
     * while the ask held it hears that and claims again. Only then: an ask on a leased, sleeping or
     * waiting instance notifies nothing, so asks add no notifying commits while instances run.
     */
    requestEndNotice: `UPDATE ${s}.instances SET notify_end = set_config('synchronous_commit', 'off', true) IS NOT NULL
WHERE id = $1 AND status IN ${UNFINISHED}
RETURNING true AS requested, CASE WHEN lease_token IS NULL AND wake_at <= $2 THEN ${notifyDue('$3', 'id')} END AS woke`,
  };
}

/**
 * `requestEndNotice()` on PostgreSQL: one autocommit UPDATE of the instance row, ordered with the
 * end by the row's lock (see `notifyEnded()`).
 */
export class PostgresEndNotices {
  private readonly sql: ReturnType<typeof endNoticeStatements>;

  constructor(
    schema: string,
    /** The wake-up channel a due instance is named on again. */
    private readonly channel: string,
  ) {
    this.sql = endNoticeStatements(quoteIdentifier(schema));
  }

  async request(executor: SqlExecutor, id: string, now: number): Promise<boolean> {
    return (await executor.query(this.sql.requestEndNotice, [id, now, this.channel])).rows.length > 0;
  }
}
