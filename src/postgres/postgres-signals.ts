import type { PostgresStatements } from './postgres-statements.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean, toJson, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowSignal, WorkflowSignalResult } from '../storage/workflow-store.js';

/**
 * The signal half of `PostgresWorkflowStore`: the signal lock (taken exclusively by signals and
 * shared by suspensions that register waits, held until commit) and storing a signal with its
 * wake-ups under it. Every path that orders signals against suspensions goes through here.
 */
export class PostgresSignals {
  constructor(
    private readonly sql: PostgresStatements,
    private readonly store: string,
  ) {}

  /** `signal()`: its own transaction, the exclusive lock, the insert. */
  send(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    return executor.transaction(async (tx) => {
      await this.lockExclusive(tx);
      return this.insert(tx, signal);
    });
  }

  /**
   * `signalInTransaction()` on the application's transaction: refuses an isolation level above
   * READ COMMITTED (under a snapshot taken before the signal lock, the wake-up would miss instances
   * that suspended meanwhile) and a client outside a transaction (the lock would end with its
   * statement), then locks and inserts.
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
    await this.lockExclusive(executor);
    const held = await executor.query(this.sql.signalLockHeld, [this.sql.signalLockKey]);
    if (!toBoolean(held.rows[0]?.held)) {
      throw new WorkflowError(
        `${this.store}: signal(..., { transaction }) got a client that is not in a transaction (the signal lock ended with ` +
          'its statement). Pass the client you ran BEGIN on, before COMMIT.',
      );
    }
    return this.insert(executor, signal);
  }

  /** The exclusive signal lock, until `tx` ends: taken before a signal's id is chosen. */
  async lockExclusive(tx: SqlExecutor): Promise<void> {
    await tx.query(this.sql.lockSignalsExclusive, [this.sql.signalLockKey]);
  }

  /** The shared signal lock: suspensions don't wait for each other, only for signals. */
  async lockShared(tx: SqlExecutor): Promise<void> {
    await tx.query(this.sql.lockSignalsShared, [this.sql.signalLockKey]);
  }

  /** Stores `signal` and wakes its waiters; the caller holds the exclusive signal lock. */
  async insert(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const { rows } = await executor.query(this.sql.insertSignal, [
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
