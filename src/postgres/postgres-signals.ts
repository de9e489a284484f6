import type { PostgresStatements } from './postgres-statements.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean, toJson, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowSignal, WorkflowSignalResult } from '../storage/workflow-store.js';

/**
 * The signal half of `PostgresWorkflowStore`. Signals and suspensions are ordered per topic (the
 * signal's name and exact key) by advisory locks that the functions of migration 0003 take inside
 * one statement: `send_signal()` exclusively, before the id is drawn; a suspension's check and
 * `read_signals()` shared. No lock here spans a round trip, except in the application's own
 * transaction (`sendInTransaction()`), and then only the signal's topic waits for it.
 */
export class PostgresSignals {
  constructor(
    private readonly sql: PostgresStatements,
    private readonly store: string,
  ) {}

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

  /** Stores `signal` and wakes its waiters, under its topic's lock (`send_signal()` takes it). */
  private async insert(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const { rows } = await executor.query(this.sql.sendSignal, [
      signal.name,
      signal.key,
      signalTopic(signal.name, signal.key),
      signal.dedupeId,
      toJson(signal.payload ?? null),
      signal.now,
      this.sql.channel,
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
