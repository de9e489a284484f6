import { journalUpsert, notify } from './postgres-sql-fragments.js';
import type { ReopenStatements } from '../sql/reopen.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { FINISHED, UNFINISHED } from '../sql/status-lists.js';
import { toJson } from '../sql/workflow-rows.js';
import { journalJson } from '../storage/journal-entry-json.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowReopen } from '../storage/workflow-store.js';

/** `reopen()`'s statements for a quoted schema. */
function reopenStatements(s: string) {
  return {
    /**
     * $1 id, $2 expected status, $3 expected runs, $4 new status, $5 error, $6 whether to set the
     * deadline, $7 deadline, $8 now, $9 entries (a JSON array), $10 entry count, $11 channel, $12
     * and $13 the name and dedupe id of the signal to retract (NULLs: none), deleted only when the
     * row was reopened.
     */
    reopen: `WITH target AS (
  UPDATE ${s}.instances SET status = $4, error = $5, deadline = CASE WHEN $6 THEN $7::bigint ELSE deadline END,
    notify_end = CASE WHEN status IN ${FINISHED} THEN false ELSE notify_end END,
    cancel_requested = (cancel_requested AND NOT terminate_requested AND $4 = 'compensating'), terminate_requested = false,
    cancel_reason = CASE WHEN cancel_requested AND NOT terminate_requested AND $4 = 'compensating' THEN cancel_reason END,
    lease_token = NULL, lease_until = NULL,
    wake_at = $8, updated_at = $8, journal_seq = journal_seq + $10
  WHERE id = $1 AND status = $2 AND runs = $3 AND NOT (lease_token IS NOT NULL AND lease_until >= $8)
  RETURNING id, journal_seq
), ${journalUpsert(s, '$9', '$10')}, retracted AS (
  DELETE FROM ${s}.signals WHERE name = $12::text AND dedupe_id = $13::text AND EXISTS (SELECT 1 FROM target)
)
SELECT ${notify('$11')} AS notified FROM target`,

    /** $1 id, $2 expected status, $3 expected runs, $4 now: `reopen`'s conditions, locking the row when they hold. */
    lockReopen: `SELECT true AS locked FROM ${s}.instances
WHERE id = $1 AND status = $2 AND runs = $3 AND NOT (lease_token IS NOT NULL AND lease_until >= $4) FOR UPDATE`,

    /**
     * $1 child ids, $2 the topics of their ends: one row when some child is gone, or finished with
     * its end gone (`reopen`'s `awaitedChildren`). Read after `lockReopen`, in a snapshot of its own.
     */
    unreachableChild: `SELECT c.id FROM unnest($1::text[], $2::text[]) AS c (id, topic)
WHERE NOT EXISTS (SELECT 1 FROM ${s}.instances i WHERE i.id = c.id
  AND (i.status IN ${UNFINISHED} OR EXISTS (SELECT 1 FROM ${s}.signals g WHERE g.topic = c.topic)))
LIMIT 1`,
  };
}

/** A reopen's journal (a JSON array, and its length) and error (JSON text), as the statement takes them. */
interface PostgresReopenValues {
  entries: string;
  count: number;
  error: string | null;
}

/**
 * `reopen()` on PostgreSQL (see `reopenInstance()`): one statement updates the row only while the
 * conditions hold, upserts the journal and retracts the signal. Awaited children are checked
 * after `lockReopen` locked the row, in the same transaction.
 */
export class PostgresReopen implements ReopenStatements<PostgresReopenValues> {
  readonly conditional = true;
  private readonly sql: ReturnType<typeof reopenStatements>;

  constructor(
    schema: string,
    /** The wake-up channel a reopened instance is notified on. */
    private readonly channel: string,
  ) {
    this.sql = reopenStatements(quoteIdentifier(schema));
  }

  encode(_id: string, reopen: WorkflowReopen, entries: readonly WorkflowJournalEntry[]): PostgresReopenValues {
    return { entries: journalJson(entries), count: entries.length, error: toJson(reopen.error) };
  }

  transaction<T>(executor: SqlExecutor, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return executor.transaction(fn);
  }

  async lock(tx: SqlExecutor, id: string, reopen: WorkflowReopen): Promise<boolean> {
    const { rows } = await tx.query(this.sql.lockReopen, [id, reopen.expect.status, reopen.expect.runs, reopen.now]);
    return rows.length > 0;
  }

  async childrenReachable(tx: SqlExecutor, children: readonly string[]): Promise<boolean> {
    const topics = children.map((child) => signalTopic(CHILD_ENDED_SIGNAL, child));
    return (await tx.query(this.sql.unreachableChild, [[...children], topics])).rows.length === 0;
  }

  async apply(
    executor: SqlExecutor,
    id: string,
    reopen: WorkflowReopen,
    values: PostgresReopenValues,
  ): Promise<boolean> {
    const { rows } = await executor.query(this.sql.reopen, [
      id,
      reopen.expect.status,
      reopen.expect.runs,
      reopen.status,
      values.error,
      reopen.deadline !== undefined,
      reopen.deadline ?? null,
      reopen.now,
      values.entries,
      values.count,
      this.channel,
      reopen.retractSignal?.name ?? null,
      reopen.retractSignal?.dedupeId ?? null,
    ]);
    return rows.length > 0;
  }
}
