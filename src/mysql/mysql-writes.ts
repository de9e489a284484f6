import { journalRows, upsertJournal, type JournalRow } from './mysql-journal.js';
import { topicHash, topicLock, type MySqlLocks } from './mysql-locks.js';
import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlSignals } from './mysql-signals.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import { InstanceWriteQueue } from '../sql/instance-write-queue.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import { distinctEntries } from '../sql/store-input.js';
import { toBoolean, toJson, toNumber, type SqlRow } from '../sql/workflow-rows.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';

/** A write with its payloads already JSON text: one that JSON can't carry fails alone, before any batch. */
interface PendingWrite {
  id: string;
  token: string;
  journal: JournalRow[];
  /** `[column, value]` for each field the write sets (payloads as JSON text). */
  fields: Array<[string, unknown]>;
  write: WorkflowWrite;
}

function prepare(id: string, token: string, write: WorkflowWrite): PendingWrite {
  const fields: Array<[string, unknown]> = [];
  if (write.status !== undefined) fields.push(['status', write.status]);
  if (write.output !== undefined) fields.push(['output', toJson(write.output)]);
  if (write.error !== undefined) fields.push(['error', toJson(write.error)]);
  if (write.customStatus !== undefined) fields.push(['custom_status', toJson(write.customStatus)]);
  if (write.signal) toJson(write.signal.payload ?? null);
  return { id, token, journal: journalRows(id, distinctEntries(write.entries)), fields, write };
}

/**
 * `write()` on MySQL. Every write locks its instance row (`FOR UPDATE`) and goes on only while
 * `token` is its lease token, so a worker that lost its lease writes nothing. Writes that neither
 * send a signal nor register waits (most of them: a step's result, an instance's end) are grouped:
 * the writes of executions running at the same time share one transaction and one commit (see
 * `StatementBatcher`), each still landing only under its own lease. A write with waits takes their
 * topics' locks shared first, one with a signal its topic's lock exclusively, in a transaction of
 * its own (see `MySqlSignals`). One instance's writes run in call order (`InstanceWriteQueue`).
 */
export class MySqlWrites {
  private readonly queue = new InstanceWriteQueue();
  private readonly batcher = new StatementBatcher<PendingWrite, boolean>((writes) => this.sendBatch(writes), 200, 2);

  constructor(
    private readonly executor: SqlExecutor,
    private readonly tables: MySqlTables,
    private readonly locks: MySqlLocks,
    private readonly signals: MySqlSignals,
  ) {}

  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    const pending = prepare(id, token, write);
    const alone = write.signal !== undefined || (write.release?.waits.length ?? 0) > 0;
    return this.queue.run(id, () =>
      alone ? retryOnLockContention(() => this.executor.transaction((tx) => this.writeAlone(tx, pending))) : this.batcher.add(pending),
    );
  }

  /**
   * A write in a transaction already open on `tx` (`ctx.transaction()`): its statements join that
   * transaction, locking the instance's row until it commits; never batched, never retried here
   * (a deadlock fails the transaction, which the engine runs again).
   */
  writeIn(tx: SqlExecutor, id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    return this.writeAlone(tx, prepare(id, token, write));
  }

  private sendBatch(writes: PendingWrite[]): Promise<boolean[]> {
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        // Locked in primary-key order, as every batch locks them: two batches never wait in a cycle.
        const rows = await this.lockRows(
          tx,
          writes.map((write) => write.id),
        );
        const landed = writes.map((write) => rows.get(write.id)?.lease_token === write.token);
        const mine = writes.filter((_, index) => landed[index]);
        await this.updateInstances(
          tx,
          mine.map((write) => ({ id: write.id, changes: this.changes(write, rows.get(write.id)!, false) })),
        );
        await upsertJournal(
          tx,
          this.tables.journal,
          mine.flatMap((write) => write.journal),
        );
        return landed;
      }),
    );
  }

  private async writeAlone(tx: SqlExecutor, pending: PendingWrite): Promise<boolean> {
    const { id, token, write } = pending;
    const waits = write.release?.waits ?? [];
    const { signal } = write;
    if (signal) await this.locks.exclusive(tx, [topicLock(signal.name, signal.key)]);
    await this.locks.shared(
      tx,
      waits.map((wait) => topicLock(wait.name, wait.key)),
    );
    const row = (await this.lockRows(tx, [id])).get(id);
    if (!row || row.lease_token !== token) return false;
    let signalAbove = false;
    if (waits.length > 0) {
      // Under the topics' shared locks: every signal of them is committed, or not yet allocated.
      const hashes = waits.map((wait) => topicHash(wait.name, wait.key));
      const { rows } = await tx.query(
        `SELECT 1 AS found FROM ${this.tables.signals} WHERE topic_hash IN (${placeholders(hashes.length)}) AND id > ? LIMIT 1`,
        [...hashes, write.release!.signalCursor],
      );
      signalAbove = rows.length > 0;
    }
    await this.updateInstances(tx, [{ id, changes: this.changes(pending, row, signalAbove) }]);
    await upsertJournal(tx, this.tables.journal, pending.journal);
    if (waits.length > 0) {
      const runs = toNumber(row.runs);
      const hashes = waits.map((wait) => topicHash(wait.name, wait.key));
      await tx.query(
        `INSERT INTO ${this.tables.waits} (topic_hash, instance_id, runs) VALUES ${hashes.map(() => '(?, ?, ?)').join(', ')}
ON DUPLICATE KEY UPDATE runs = VALUES(runs)`,
        hashes.flatMap((hash) => [hash, id, runs]),
      );
      await tx.query(`DELETE FROM ${this.tables.waits} WHERE instance_id = ? AND runs < ?`, [id, runs]);
    }
    if (signal) await this.signals.insert(tx, signal, true);
    return true;
  }

  /** The rows of `ids`, locked, by id. */
  private async lockRows(tx: SqlExecutor, ids: string[]): Promise<Map<string, SqlRow>> {
    const unique = [...new Set(ids)];
    const { rows } = await tx.query(
      `SELECT id, lease_token, cancel_requested, status, runs FROM ${this.tables.instances}
WHERE id IN (${placeholders(unique.length)}) ORDER BY id FOR UPDATE`,
      unique,
    );
    return new Map(rows.map((row) => [String(row.id), row]));
  }

  /**
   * What the write sets, on the locked `row`, as `[column, value]`s. On release: the waits, no
   * lease, and `wakeAt` now when a signal the execution never saw matches a new wait
   * (`signalAbove`) or a cancel waits for a suspended instance to notice it, else the release's
   * `wakeAt`. `updated_at` when anything besides the journal changes.
   */
  private changes({ write, fields }: PendingWrite, row: SqlRow, signalAbove: boolean): Array<[string, unknown]> {
    const changes: Array<[string, unknown]> = [...fields];
    const { release } = write;
    if (release) {
      const status = write.status ?? String(row.status);
      const wakeNow = signalAbove || (toBoolean(row.cancel_requested) && status === 'suspended');
      changes.push(
        ['wait_topics', JSON.stringify(release.waits.map((wait) => signalTopic(wait.name, wait.key)))],
        ['lease_token', null],
        ['lease_until', null],
        ['wake_at', wakeNow ? write.now : release.wakeAt],
      );
    }
    if (changes.length > 0) changes.push(['updated_at', write.now]);
    return changes;
  }

  /**
   * Applies each instance's changes in one statement: per column, a \`CASE id\` over the instances
   * that set it (the others keep theirs).
   */
  private async updateInstances(tx: SqlExecutor, updates: ReadonlyArray<{ id: string; changes: Array<[string, unknown]> }>): Promise<void> {
    const changed = updates.filter((update) => update.changes.length > 0);
    if (changed.length === 0) return;
    const byColumn = new Map<string, Array<[string, unknown]>>();
    for (const { id, changes } of changed) {
      for (const [column, value] of changes) {
        const list = byColumn.get(column) ?? [];
        list.push([id, value]);
        byColumn.set(column, list);
      }
    }
    const params: unknown[] = [];
    const sets = [...byColumn].map(([column, values]) => {
      for (const pair of values) params.push(...pair);
      return `${column} = CASE id ${values.map(() => 'WHEN ? THEN ?').join(' ')} ELSE ${column} END`;
    });
    params.push(...changed.map((update) => update.id));
    await tx.query(`UPDATE ${this.tables.instances} SET ${sets.join(', ')} WHERE id IN (${placeholders(changed.length)})`, params);
  }
}
