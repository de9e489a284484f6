import { sessionIsolation } from './from-mysql2.js';
import { topicHash, topicLock, type MySqlLocks } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlTables } from './mysql-tables.js';
import { WorkflowError } from '../errors/workflow.error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toNumber, toSignal } from '../sql/workflow-rows.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
} from '../storage/workflow-store.js';

/** The signals' statements for the store's tables. */
function signalStatements({ signals, instances, waits }: MySqlTables) {
  return {
    /**
     * name, key, topic hash, dedupe id, payload, now. Insert-or-ignore on (name, dedupe_id): a
     * read-then-insert would let two senders both store it.
     */
    insertSignal: `INSERT IGNORE INTO ${signals} (name, \`key\`, topic_hash, dedupe_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    /**
     * now three times, topic hash: wakes the instances suspended on the topic. Driven by the topic's
     * waits (STRAIGHT_JOIN): it locks only the instances that wait on it.
     */
    wakeWaiting: `UPDATE ${waits} w STRAIGHT_JOIN ${instances} i ON i.id = w.instance_id AND i.runs = w.runs
SET i.wake_at = CASE WHEN i.wake_at IS NOT NULL AND i.wake_at <= ? THEN i.wake_at ELSE ? END, i.updated_at = ?
WHERE w.topic_hash = ? AND i.status = 'suspended'`,
    /**
     * name, dedupe id: the signal stored before. A locking read: it sees it even under the
     * application's REPEATABLE READ snapshot.
     */
    storedSignal: `SELECT id, \`key\` FROM ${signals} WHERE name = ? AND dedupe_id = ? LOCK IN SHARE MODE`,
    /** topic hash, after id, up to id, name, key. */
    readSignals: `SELECT id, name, \`key\`, payload, created_at FROM ${signals}
WHERE topic_hash = ? AND id > ? AND id <= ? AND name = ? AND \`key\` <=> ? ORDER BY id`,
    /** The highest signal id committed, or 0. */
    lastId: `SELECT COALESCE(MAX(id), 0) AS last FROM ${signals}`,
  };
}

/**
 * The signal half of `MySqlWorkflowStore`, and the reason a signal never slips past a suspension:
 *
 * - A signal takes its topic's lock exclusively before its id is allocated and holds it to commit;
 *   a suspension that waits on the topic takes it shared before it checks for signals and holds it
 *   until its waits are committed. So either the suspension sees the signal, or the signal's
 *   wake-up sees the wait. Signals and suspensions of other topics never wait for either.
 * - Ids are `AUTO_INCREMENT`, allocated in order but committed in any order, so a claim's last id
 *   N may be above a signal still in flight. `signals()` therefore first waits for the topic's
 *   in-flight signals (a shared lock it lets go at once): every signal of the topic with an id up
 *   to N was allocated before N was read, under the lock, and is committed when the lock is
 *   granted; any later one gets an id above N, which the suspension's check catches.
 */
export class MySqlSignals {
  private readonly sql: ReturnType<typeof signalStatements>;

  constructor(
    tables: MySqlTables,
    private readonly locks: MySqlLocks,
    private readonly store: string,
  ) {
    this.sql = signalStatements(tables);
  }

  /** `signal()`: in a transaction of the store's own, retried on lock contention. */
  send(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    return retryOnLockContention(() => executor.transaction((tx) => this.insert(tx, signal), { held: true }));
  }

  /**
   * `signalInTransaction()` on the application's transaction, whose session must be READ COMMITTED
   * (or READ UNCOMMITTED): under a snapshot the wake-up would miss instances that suspended
   * meanwhile, and its locking reads would hold up other topics.
   */
  async sendInTransaction(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    const isolation = await sessionIsolation(executor);
    if (isolation !== 'READ-COMMITTED' && isolation !== 'READ-UNCOMMITTED') {
      throw new WorkflowError(
        `${this.store}: signal(..., { transaction }) needs a READ COMMITTED transaction; this connection's session is ${isolation || 'of an unknown level'}. ` +
          'Under a snapshot the wake-up would miss instances that suspended meanwhile, and its locking reads would hold up ' +
          'other topics. Run `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED` on the connection before ' +
          '`beginTransaction()`, or send the signal without `transaction`.',
      );
    }
    return this.insert(executor, signal);
  }

  /** Stores `signal` and wakes its waiters, in `tx`; `locked` when the caller holds its topic lock already. */
  async insert(tx: SqlExecutor, signal: NewWorkflowSignal, locked = false): Promise<WorkflowSignalResult> {
    if (!locked) await this.locks.exclusive(tx, [topicLock(signal.name, signal.key)]);
    const hash = topicHash(signal.name, signal.key);
    const inserted = await tx.query(this.sql.insertSignal, [
      signal.name,
      signal.key,
      hash,
      signal.dedupeId,
      toJson(signal.payload ?? null),
      signal.now,
    ]);
    if (inserted.rowCount === 1 && inserted.insertId) {
      const woken = await tx.query(this.sql.wakeWaiting, [signal.now, signal.now, signal.now, hash]);
      return { id: inserted.insertId, woken: woken.rowCount, created: true, key: signal.key };
    }
    const { rows } = await tx.query(this.sql.storedSignal, [signal.name, signal.dedupeId]);
    const row = rows[0];
    if (!row) throw new Error(`${this.store}: signal ${JSON.stringify(signal.name)} was neither stored nor found.`);
    return { id: toNumber(row.id), woken: 0, created: false, key: row.key === null ? null : String(row.key) };
  }

  /** `signals()`. */
  async read(executor: SqlExecutor, query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    await this.locks.awaitExclusiveHolders(executor, topicLock(query.name, query.key));
    const { rows } = await executor.query(this.sql.readSignals, [
      topicHash(query.name, query.key),
      query.afterId,
      Math.min(query.upToId, Number.MAX_SAFE_INTEGER),
      query.name,
      query.key,
    ]);
    return rows.map(toSignal);
  }

  /** The highest signal id committed, or 0. */
  async lastId(executor: SqlExecutor): Promise<number> {
    const { rows } = await executor.query(this.sql.lastId);
    return toNumber(rows[0]?.last ?? 0);
  }
}
