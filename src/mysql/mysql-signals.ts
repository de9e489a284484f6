import { topicHash, topicLock, type MySqlLocks } from './mysql-locks.js';
import type { MySqlTables } from './mysql-tables.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toJson, toNumber, toSignal } from '../sql/workflow-rows.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
} from '../storage/workflow-store.js';

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
  constructor(
    private readonly tables: MySqlTables,
    private readonly locks: MySqlLocks,
  ) {}

  /** Stores `signal` and wakes its waiters, in `tx`; `locked` when the caller holds its topic lock already. */
  async insert(tx: SqlExecutor, signal: NewWorkflowSignal, locked = false): Promise<WorkflowSignalResult> {
    const { signals, instances, waits } = this.tables;
    if (!locked) await this.locks.exclusive(tx, [topicLock(signal.name, signal.key)]);
    const hash = topicHash(signal.name, signal.key);
    // Insert-or-ignore on (name, dedupe_id): a read-then-insert would let two senders both store it.
    const inserted = await tx.query(
      `INSERT IGNORE INTO ${signals} (name, \`key\`, topic_hash, dedupe_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      [signal.name, signal.key, hash, signal.dedupeId, toJson(signal.payload ?? null), signal.now],
    );
    if (inserted.rowCount === 1 && inserted.insertId) {
      const woken = await tx.query(
        // Driven by the topic's waits (STRAIGHT_JOIN): it locks only the instances that wait on it.
        `UPDATE ${waits} w STRAIGHT_JOIN ${instances} i ON i.id = w.instance_id AND i.runs = w.runs
SET i.wake_at = CASE WHEN i.wake_at IS NOT NULL AND i.wake_at <= ? THEN i.wake_at ELSE ? END, i.updated_at = ?
WHERE w.topic_hash = ? AND i.status = 'suspended'`,
        [signal.now, signal.now, signal.now, hash],
      );
      return { id: inserted.insertId, woken: woken.rowCount, created: true, key: signal.key };
    }
    // A locking read: it sees the earlier signal even under the application's REPEATABLE READ snapshot.
    const { rows } = await tx.query(
      `SELECT id, \`key\` FROM ${signals} WHERE name = ? AND dedupe_id = ? LOCK IN SHARE MODE`,
      [signal.name, signal.dedupeId],
    );
    const row = rows[0];
    if (!row)
      throw new Error(`MySqlWorkflowStore: signal ${JSON.stringify(signal.name)} was neither stored nor found.`);
    return { id: toNumber(row.id), woken: 0, created: false, key: row.key === null ? null : String(row.key) };
  }

  async read(executor: SqlExecutor, query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    await this.locks.awaitExclusiveHolders(executor, topicLock(query.name, query.key));
    const { rows } = await executor.query(
      `SELECT id, name, \`key\`, payload, created_at FROM ${this.tables.signals}
WHERE topic_hash = ? AND id > ? AND id <= ? AND name = ? AND \`key\` <=> ? ORDER BY id`,
      [
        topicHash(query.name, query.key),
        query.afterId,
        Math.min(query.upToId, Number.MAX_SAFE_INTEGER),
        query.name,
        query.key,
      ],
    );
    return rows.map(toSignal);
  }

  /** The highest signal id committed, or 0. */
  async lastId(executor: SqlExecutor): Promise<number> {
    const { rows } = await executor.query(`SELECT COALESCE(MAX(id), 0) AS last FROM ${this.tables.signals}`);
    return toNumber(rows[0]?.last ?? 0);
  }
}
