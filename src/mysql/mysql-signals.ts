import { sessionIsolation } from './from-mysql2.js';
import { topicHash } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import { COMMON_GROUND, type MySqlServerFeatures } from './mysql-server.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import { WorkflowError } from '../errors/workflow.error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toNumber, toSignal } from '../sql/workflow-rows.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
} from '../storage/workflow-store.js';

/** The most ids one locking read of `signals()` names. */
const MAX_IDS_PER_READ = 1000;

/** The signals' statements for the store's tables. */
function signalStatements({ signals, instances, waits }: MySqlTables) {
  return {
    /**
     * name, key, topic hash, dedupe id, payload, now. Insert-or-ignore on (name, dedupe_id): a
     * read-then-insert would let two senders both store it.
     */
    insertSignal: `INSERT IGNORE INTO ${signals} (name, \`key\`, topic_hash, dedupe_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    /**
     * topic hash: a locking read of the topic's waits, which waits for a suspension still
     * registering one (its rows are not committed yet) and then reads them as committed.
     */
    awaitWaits: `SELECT instance_id FROM ${waits} WHERE topic_hash = ? LOCK IN SHARE MODE`,
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
    /**
     * topic hash, after id, up to id, name, key. A locking read (its own statement, so it lets go
     * at once): it waits for a signal of the range still in flight, then reads it committed.
     */
    readSignals: `SELECT id, name, \`key\`, payload, created_at FROM ${signals}
WHERE topic_hash = ? AND id > ? AND id <= ? AND name = ? AND \`key\` <=> ? ORDER BY id LOCK IN SHARE MODE`,
    /**
     * MariaDB, topic hash, after id, up to id: the ids of the range's rows, those still in flight
     * included (a dirty read of the index, which locks and waits for nothing).
     */
    rangeIds: `BEGIN NOT ATOMIC
SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
SELECT id FROM ${signals} WHERE topic_hash = ? AND id > ? AND id <= ? ORDER BY id;
END`,
    /**
     * ids..., topic hash, name, key: a locking read of those rows by primary key, which waits for
     * the ones still in flight and reads them committed (a row rolled back is gone).
     */
    readByIds: (count: number) => `SELECT id, name, \`key\`, payload, created_at FROM ${signals}
WHERE id IN (${placeholders(count)}) AND topic_hash = ? AND name = ? AND \`key\` <=> ? ORDER BY id LOCK IN SHARE MODE`,
    /** The highest signal id committed, or 0. */
    lastId: `SELECT COALESCE(MAX(id), 0) AS last FROM ${signals}`,
  };
}

/**
 * The signal half of `MySqlWorkflowStore`, and the reason a signal never slips past a suspension,
 * with no lock that one signal holds and another waits for (so a transaction may send several, in
 * any order, beside others):
 *
 * - A signal inserts its row first, then reads its topic's waits with a locking read, which waits
 *   for a suspension that registered a wait on the topic and has not committed, then wakes the
 *   suspended instances. A suspension registers its waits first, then looks for a signal of its
 *   topics above its cursor with a locking read that does not wait (NOWAIT): one committed, or one
 *   still in flight (its row locked), makes it due now. So either the suspension sees the signal,
 *   or the signal's wake-up waits for the suspension's commit and sees the wait; the suspension
 *   never waits for a signal.
 * - Ids are `AUTO_INCREMENT`, allocated in order but committed in any order, so a claim's last id
 *   N may be above a signal still in flight. `signals()` therefore locks the range's rows (let go
 *   at once), which waits for those still in flight: every signal of the topic with an id up to N
 *   was inserted before N was read; any later one gets an id above N, which the suspension's check
 *   catches. It waits for no other topic's signal (see `read()`).
 */
export class MySqlSignals {
  private readonly sql: ReturnType<typeof signalStatements>;
  /** What the server offers beyond the common ground: set by the store's `init()`. */
  server: MySqlServerFeatures = COMMON_GROUND;

  constructor(
    tables: MySqlTables,
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

  /** Stores `signal` and wakes its waiters, in `tx`. */
  async insert(tx: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
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
      await tx.query(this.sql.awaitWaits, [hash]);
      const woken = await tx.query(this.sql.wakeWaiting, [signal.now, signal.now, signal.now, hash]);
      return { id: inserted.insertId, woken: woken.rowCount, created: true, key: signal.key };
    }
    const { rows } = await tx.query(this.sql.storedSignal, [signal.name, signal.dedupeId]);
    const row = rows[0];
    if (!row) throw new Error(`${this.store}: signal ${JSON.stringify(signal.name)} was neither stored nor found.`);
    return { id: toNumber(row.id), woken: 0, created: false, key: row.key === null ? null : String(row.key) };
  }

  /**
   * `signals()`: every signal of the topic in the range, waiting for those of the topic still in
   * flight and for nothing else.
   *
   * A locking read of the range would also lock the index entry just past it, which may be another
   * topic's signal in flight (InnoDB locks an entry before the server sees it is out of range, at
   * READ COMMITTED too), and wait for that transaction. So on MariaDB the read finds the range's
   * ids with a dirty read first (in flight or not: no lock, no wait), then locks those rows by
   * primary key. MySQL 8.0 has no compound statement to run the dirty read in one round trip: there
   * the range is read with one locking read, which may wait for a neighbouring topic's signal.
   */
  async read(executor: SqlExecutor, query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    const hash = topicHash(query.name, query.key);
    const upTo = Math.min(query.upToId, Number.MAX_SAFE_INTEGER);
    if (!this.server.oneRoundTripBatches) {
      // In a READ COMMITTED transaction of its own: under REPEATABLE READ the locking read would
      // also lock the gap past its range.
      const { rows } = await executor.transaction((tx) =>
        tx.query(this.sql.readSignals, [hash, query.afterId, upTo, query.name, query.key]),
      );
      return rows.map(toSignal);
    }
    const { rows: found } = await executor.query(this.sql.rangeIds, [hash, query.afterId, upTo]);
    const signals: WorkflowSignalRecord[] = [];
    for (let at = 0; at < found.length; at += MAX_IDS_PER_READ) {
      const ids = found.slice(at, at + MAX_IDS_PER_READ).map((row) => toNumber(row.id));
      const { rows } = await executor.transaction((tx) =>
        tx.query(this.sql.readByIds(ids.length), [...ids, hash, query.name, query.key]),
      );
      for (const row of rows) signals.push(toSignal(row));
    }
    return signals;
  }

  /** The highest signal id committed, or 0. */
  async lastId(executor: SqlExecutor): Promise<number> {
    const { rows } = await executor.query(this.sql.lastId);
    return toNumber(rows[0]?.last ?? 0);
  }
}
