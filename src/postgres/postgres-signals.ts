import { WorkflowError } from '../errors/workflow.error.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean, toJson, toNumber, toSignal } from '../sql/workflow-rows.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
} from '../storage/workflow-store.js';

/** The signals' statements for a quoted schema. */
function signalStatements(s: string) {
  return {
    /**
     * $1 topic: takes the topic's signal lock shared until the transaction ends, once the suspensions
     * on it in progress committed (migration 0011).
     */
    lockTopic: `SELECT ${s}.signal_begin($1) AS locked`,
    /**
     * $1 topic: whether this session still holds the topic's lock after the statement that took it,
     * i.e. whether that statement ran inside a transaction block.
     */
    topicLockHeld: `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
  AND mode = 'ShareLock' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = ${s}.topic_lock($1)) AS held`,

    /**
     * $1 name, $2 key, $3 topic, $4 dedupe id, $5 payload, $6 now, $7 channel. One row: the new
     * signal (`created`, with how many it woke) or, on a dedupe hit, the earlier one. The function
     * takes the topic's lock and reads after it (migration 0003), all in this one statement.
     */
    sendSignal: `SELECT id, key, created, woken FROM ${s}.send_signal($1, $2, $3, $4, $5, $6, $7)`,

    /** $1 topic, $2 after id, $3 up to id: waits for a signal of the topic still being sent. */
    signals: `SELECT id, name, key, payload, created_at FROM ${s}.read_signals($1, $2, $3)`,
  };
}

/**
 * The signal half of `PostgresWorkflowStore`. Signals and suspensions are ordered per topic (the
 * signal's name and exact key) by advisory locks that the functions of migrations 0003 and 0011
 * take inside one statement: `send_signal()` shared, before the id is drawn (signals never wait for
 * each other, in whatever order a transaction sends them); `read_signals()` exclusively; a
 * suspension's check never waits while it holds one. No lock here spans a round trip, except in
 * the application's own transaction (`sendInTransaction()`), and then only readers of the signal's
 * topic wait for it.
 */
export class PostgresSignals {
  private readonly sql: ReturnType<typeof signalStatements>;

  constructor(
    schema: string,
    /** The wake-up channel a signal that woke an instance is notified on. */
    private readonly channel: string,
    private readonly store: string,
  ) {
    this.sql = signalStatements(quoteIdentifier(schema));
  }

  /** `signal()`: one statement, in a transaction of its own. */
  send(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    return this.insert(executor, signal);
  }

  /**
   * `signalInTransaction()` on the application's transaction: refuses an isolation level above
   * READ COMMITTED (under a snapshot taken before the topic lock, the wake-up would miss instances
   * that suspended meanwhile) and a client outside a transaction (the lock would end with its
   * statement, and the signal would commit on its own), then sends it.
   */
  async sendInTransaction(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const { rows } = await executor.query('SHOW transaction_isolation');
    const isolation = String(rows[0]?.transaction_isolation ?? '');
    if (isolation !== 'read committed') {
      throw new WorkflowError(
        `${this.store}: signal(..., { transaction }) needs a READ COMMITTED transaction; this one is ${isolation.toUpperCase()}. ` +
          'Under a snapshot taken before the signal lock, the wake-up would miss instances that suspended meanwhile. ' +
          'Send the signal from a READ COMMITTED transaction, or without `transaction`.',
      );
    }
    const topic = signalTopic(signal.name, signal.key);
    await executor.query(this.sql.lockTopic, [topic]);
    const held = await executor.query(this.sql.topicLockHeld, [topic]);
    if (!toBoolean(held.rows[0]?.held)) {
      throw new WorkflowError(
        `${this.store}: signal(..., { transaction }) got a client that is not in a transaction (the signal lock ended with ` +
          'its statement). Pass the client you ran BEGIN on, before COMMIT.',
      );
    }
    return this.insert(executor, signal);
  }

  /** `signals()`: waits for the topic's signals still being sent (`read_signals()` takes its lock exclusively), then reads. */
  async read(executor: SqlExecutor, query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await executor.query(this.sql.signals, [
      signalTopic(query.name, query.key),
      query.afterId,
      query.upToId,
    ]);
    return rows.map(toSignal);
  }

  /** Stores `signal` and wakes its waiters, under its topic's lock (`send_signal()` takes it). */
  private async insert(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const { rows } = await executor.query(this.sql.sendSignal, [
      signal.name,
      signal.key,
      signalTopic(signal.name, signal.key),
      signal.dedupeId,
      toJson(signal.payload ?? null),
      signal.now,
      this.channel,
    ]);
    const row = rows[0];
    if (!row) throw new Error(`${this.store}: signal ${JSON.stringify(signal.name)} was neither stored nor found.`);
    return {
      id: toNumber(row.id),
      woken: toNumber(row.woken),
      created: toBoolean(row.created),
      key: row.key === null || row.key === undefined ? null : String(row.key),
    };
  }
}
