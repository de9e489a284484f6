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

/**
 * Row locks in `<schema>_locks`, held until the transaction ends: the signal lock of one topic
 * (exclusive for a signal, shared for a suspension that waits on it) and a workflow's concurrency
 * lock. InnoDB row locks have both modes, which `GET_LOCK` lacks. Several are always taken in hash
 * order, so two transactions never wait on each other in a cycle (and a deadlock InnoDB finds
 * anyway is retried by the store). A row is created the first time its lock is taken.
 */
export class MySqlLocks {
  constructor(private readonly table: string) {}

  /** Takes the locks exclusively: one statement that inserts missing rows and locks existing ones. */
  async exclusive(tx: SqlExecutor, hashes: readonly Buffer[]): Promise<void> {
    const keys = sorted(hashes);
    if (keys.length === 0) return;
    await tx.query(
      `INSERT INTO ${this.table} (lock_hash) VALUES ${keys.map(() => '(?)').join(', ')} ON DUPLICATE KEY UPDATE lock_hash = lock_hash`,
      keys,
    );
  }

  /**
   * Takes the locks shared. Rows that don't exist yet are created, which locks them exclusively
   * for this transaction: only the first suspension on a new topic pays that.
   */
  async shared(tx: SqlExecutor, hashes: readonly Buffer[]): Promise<void> {
    const keys = sorted(hashes);
    if (keys.length === 0) return;
    const { rows } = await tx.query(
      `SELECT lock_hash FROM ${this.table} WHERE lock_hash IN (${placeholders(keys.length)}) ORDER BY lock_hash LOCK IN SHARE MODE`,
      keys,
    );
    if (rows.length === keys.length) return;
    const found = new Set(rows.map((row) => Buffer.from(row.lock_hash as Uint8Array).toString('hex')));
    await this.exclusive(
      tx,
      keys.filter((key) => !found.has(key.toString('hex'))),
    );
  }

  /**
   * Outside a transaction: waits until no transaction holds the lock exclusively (a signal of the
   * topic in flight), then lets go at once.
   */
  async awaitExclusiveHolders(executor: SqlExecutor, hash: Buffer): Promise<void> {
    await executor.query(`SELECT lock_hash FROM ${this.table} WHERE lock_hash = ? LOCK IN SHARE MODE`, [hash]);
  }
}
