import { createHash } from 'node:crypto';
import { placeholders } from './mysql-tables.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** A lock row's key: SHA-256 of its kind and name (a topic can be longer than an index entry holds). */
export function lockHash(kind: 'topic' | 'workflow', name: string): Buffer {
  return createHash('sha256').update(`${kind}:${name}`).digest();
}

/** A signal topic's hash, as `signals.topic_hash` and `waits.topic_hash` hold it. */
export function topicHash(name: string, key: string | null): Buffer {
  return createHash('sha256').update(signalTopic(name, key)).digest();
}

/** The topic lock of a signal name and key. */
export function topicLock(name: string, key: string | null): Buffer {
  return lockHash('topic', signalTopic(name, key));
}

function sorted(hashes: readonly Buffer[]): Buffer[] {
  const unique = new Map(hashes.map((hash) => [hash.toString('hex'), hash]));
  return [...unique.keys()].sort().map((hex) => unique.get(hex)!);
}

/** The lock rows' statements for the store's `locks` table. */
function lockStatements(table: string) {
  return {
    /** The keys (in order): inserts missing rows and locks existing ones, exclusively. */
    exclusive: (keys: number) =>
      `INSERT INTO ${table} (lock_hash) VALUES ${Array.from({ length: keys }, () => '(?)').join(', ')} ON DUPLICATE KEY UPDATE lock_hash = lock_hash`,
    /** The keys: locks those that exist, shared, in key order. */
    shared: (keys: number) =>
      `SELECT lock_hash FROM ${table} WHERE lock_hash IN (${placeholders(keys)}) ORDER BY lock_hash LOCK IN SHARE MODE`,
    /** limit: lock rows no transaction holds, locked. */
    idle: `SELECT lock_hash FROM ${table} ORDER BY lock_hash LIMIT ? FOR UPDATE SKIP LOCKED`,
    /** The keys. */
    delete: (keys: number) => `DELETE FROM ${table} WHERE lock_hash IN (${placeholders(keys)})`,
    /** The key: waits for its exclusive holders, shared. */
    awaitExclusive: `SELECT lock_hash FROM ${table} WHERE lock_hash = ? LOCK IN SHARE MODE`,
  };
}

/**
 * Row locks in `<schema>_locks`, held until the transaction ends: the signal lock of one topic
 * (exclusive for a signal, shared for a suspension that waits on it) and a workflow's concurrency
 * lock. InnoDB row locks have both modes, which `GET_LOCK` lacks. Several are always taken in hash
 * order, so two transactions never wait on each other in a cycle (and a deadlock InnoDB finds
 * anyway is retried by the store). A row is created the first time its lock is taken.
 */
export class MySqlLocks {
  private readonly sql: ReturnType<typeof lockStatements>;

  constructor(table: string) {
    this.sql = lockStatements(table);
  }

  /** Takes the locks exclusively: one statement that inserts missing rows and locks existing ones. */
  async exclusive(tx: SqlExecutor, hashes: readonly Buffer[]): Promise<void> {
    const keys = sorted(hashes);
    if (keys.length === 0) return;
    await tx.query(this.sql.exclusive(keys.length), keys);
  }

  /**
   * Takes the locks shared. Rows that don't exist yet are created, which locks them exclusively
   * for this transaction: only the first suspension on a new topic pays that.
   */
  async shared(tx: SqlExecutor, hashes: readonly Buffer[]): Promise<void> {
    const keys = sorted(hashes);
    if (keys.length === 0) return;
    const { rows } = await tx.query(this.sql.shared(keys.length), keys);
    if (rows.length === keys.length) return;
    const found = new Set(rows.map((row) => Buffer.from(row.lock_hash as Uint8Array).toString('hex')));
    await this.exclusive(
      tx,
      keys.filter((key) => !found.has(key.toString('hex'))),
    );
  }

  /**
   * Deletes up to `limit` lock rows that no transaction holds (their own transaction), and resolves
   * to how many it deleted. Safe for every row, whether or not instances wait on its topic, because
   * a row carries nothing from one transaction to the next: the protocol needs the row only while
   * a signal, a suspension or a reader holds it, and a missing row behaves as a topic never used
   * (the next signal or suspension inserts it, locked, and the unique key orders two that insert
   * together). The rows it deletes it first locks `FOR UPDATE SKIP LOCKED`: it never deletes one a
   * signal or a suspension holds, and never waits, so it holds up nobody for longer than its own
   * short transaction and can't be part of a deadlock. A signal, suspension or reader that asks for
   * a row meanwhile waits for that commit, then finds the row gone and proceeds as on first use.
   */
  async purge(executor: SqlExecutor, limit: number): Promise<number> {
    return executor.transaction(async (tx) => {
      const { rows } = await tx.query(this.sql.idle, [limit]);
      if (rows.length === 0) return 0;
      const { rowCount } = await tx.query(
        this.sql.delete(rows.length),
        rows.map((row) => row.lock_hash),
      );
      return rowCount;
    });
  }

  /**
   * Outside a transaction: waits until no transaction holds the lock exclusively (a signal of the
   * topic in flight), then lets go at once.
   */
  async awaitExclusiveHolders(executor: SqlExecutor, hash: Buffer): Promise<void> {
    await executor.query(this.sql.awaitExclusive, [hash]);
  }
}
