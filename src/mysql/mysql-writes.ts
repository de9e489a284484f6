import {
  fencedJournalInsert,
  insertedRecords,
  journalRows,
  upsertJournal,
  upsertJournalStatement,
  type JournalRow,
} from './mysql-journal.js';
import { COMMON_GROUND, compoundTransaction, repeatedOn, type MySqlServerFeatures } from './mysql-server.js';
import { topicHash } from './mysql-locks.js';
import { outsideTransaction } from './mysql-session.js';
import { isLockNotGranted, retryOnLockContention } from './mysql-retry.js';
import type { MySqlSignals } from './mysql-signals.js';
import { MAX_BATCH_TEXT, placeholders, type MySqlTables } from './mysql-tables.js';
import { instanceUpdateStatement, type Change, type InstanceUpdate } from './mysql-instance-update.js';
import { InstanceWriteQueue } from '../sql/instance-write-queue.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import { distinctEntries } from '../sql/distinct-entries.js';
import { toJson, toNumber, type SqlRow } from '../sql/workflow-rows.js';
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

/** The text a write sends: its journal entries' and its fields' JSON (what `MAX_BATCH_TEXT` bounds). */
function pendingText({ journal, fields }: PendingWrite): number {
  let length = 0;
  for (const row of journal) length += row[2].length;
  for (const [, value] of fields) if (typeof value === 'string') length += value.length;
  return length;
}

/** Whether the write changes the instance row, not only its journal. */
function changesRow({ fields, write }: PendingWrite): boolean {
  return fields.length > 0 || write.release !== undefined;
}

/**
 * The writes' own statements for the store's tables; the journal's and the instances' updates are
 * built in mysql-journal.ts and mysql-instance-update.ts.
 */
function writeStatements({ instances, signals, waits }: MySqlTables) {
  return {
    /** The ids: their rows locked in key order, with their lease tokens. */
    lockedTokens: (ids: number) =>
      `SELECT id, lease_token FROM ${instances} WHERE id IN (${placeholders(ids)}) ORDER BY id FOR UPDATE`,
    /** id: the row locked, with its lease token and runs (and, `inTransaction`, whether the session is in a transaction). */
    lockRow: (inTransaction: boolean) =>
      `SELECT lease_token, runs${inTransaction ? ', @@in_transaction AS in_transaction' : ''} FROM ${instances} WHERE id = ? FOR UPDATE`,
    /**
     * The topic hashes, then the cursor: whether a signal above the cursor matches a wait, locking
     * without waiting (a row still being inserted fails it: a signal in flight).
     */
    signalAbove: (topics: number) =>
      `SELECT id FROM ${signals} WHERE topic_hash IN (${placeholders(topics)}) AND id > ? LIMIT 1 FOR UPDATE NOWAIT`,
    /** id, then topic hashes: the instance's wait rows of those topics, as committed (no lock). */
    waitsOf: (topics: number) =>
      `SELECT topic_hash FROM ${waits} WHERE instance_id = ? AND topic_hash IN (${placeholders(topics)})`,
    /** id, then topic hashes: those of them no transaction holds, locked. */
    freeWaitsOf: (topics: number) =>
      `SELECT topic_hash FROM ${waits} WHERE instance_id = ? AND topic_hash IN (${placeholders(topics)}) FOR UPDATE SKIP LOCKED`,
    /** (topic hash, id, runs) of each wait. */
    registerWaits: (topics: number) =>
      `INSERT INTO ${waits} (topic_hash, instance_id, runs) VALUES ${Array.from({ length: topics }, () => '(?, ?, ?)').join(', ')}
ON DUPLICATE KEY UPDATE runs = VALUES(runs)`,
    /** id, runs: the waits of earlier suspensions that no transaction holds, locked. */
    earlierWaits: `SELECT topic_hash FROM ${waits} WHERE instance_id = ? AND runs < ? FOR UPDATE SKIP LOCKED`,
    /** id, then topic hashes: deletes those waits. */
    dropWaits: (rows: number) => `DELETE FROM ${waits} WHERE instance_id = ? AND topic_hash IN (${placeholders(rows)})`,
  };
}

/**
 * `write()` on MySQL: a worker that lost its lease writes nothing. Writes that neither send a
 * signal nor register waits (most of them: a step's result, an instance's end) are grouped: the
 * writes of executions running at the same time share one commit (see `StatementBatcher`), each
 * still landing only under its own lease:
 *
 * - journal entries alone: one statement, `INSERT ... SELECT` from the instances still holding
 *   the writers' tokens, locked `FOR UPDATE` (see `fencedJournalInsert()`); in a transaction
 *   when several writes share it (see `journalOnly()`);
 * - with changes to the instances: one transaction whose `UPDATE` sets them only where the token
 *   is the writer's, then the journal entries. When it matched fewer rows than writes (a lease
 *   lost), it is rolled back and run again reading the locked rows first. Either way it locks only
 *   rows by primary key, in key order, so the transaction keeps the session's isolation level
 *   (one statement fewer).
 *
 * On MariaDB (see `MySqlServerFeatures`) each batch is one round trip: the journal's statement
 * answers with `RETURNING` which instances' rows went in, and the transaction that changes
 * instances is one compound statement, which checks the rows the `UPDATE` matched and rolls back
 * (to run again as above) when a lease was lost. The same statements, locks and commits.
 *
 * A write with waits locks its instance row to read it, registers its waits and then looks for a
 * signal above its cursor without waiting for one in flight, in a READ COMMITTED transaction of
 * its own (see `MySqlSignals`). One instance's writes run in call order (`InstanceWriteQueue`).
 */
export class MySqlWrites {
  private readonly queue = new InstanceWriteQueue();
  // Bounded in text too: a statement larger than the server takes would fail every write of it.
  private readonly batcher = new StatementBatcher<PendingWrite, boolean>({
    send: (writes) => this.sendBatch(writes),
    max: 200,
    parallel: 2,
    bound: { weight: pendingText, max: MAX_BATCH_TEXT },
  });

  /** What the server offers beyond the common ground: set by the store's `init()`. */
  server: MySqlServerFeatures = COMMON_GROUND;
  private readonly sql: ReturnType<typeof writeStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    private readonly tables: MySqlTables,
    private readonly signals: MySqlSignals,
  ) {
    this.sql = writeStatements(tables);
  }

  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    const pending = prepare(id, token, write);
    const alone = write.signal !== undefined || (write.release?.waits.length ?? 0) > 0;
    return this.queue.run(id, () =>
      alone
        ? retryOnLockContention(() => this.executor.transaction((tx) => this.writeAlone(tx, pending), { held: true }))
        : this.batcher.add(pending),
    );
  }

  /**
   * A write in a transaction already open on `tx` (`ctx.transaction()`): its statements join that
   * transaction, locking the instance's row until it commits; never batched, never retried here
   * (a deadlock fails the transaction, which the engine runs again). `checkSession`: the
   * transaction is an ORM's (the store's `transactions` option), whose statements the store can't
   * watch as it does `fromMysql2()`'s, so the write first makes sure its session is still in that
   * transaction (see `lockRow()`), and throws when not rather than commit alone.
   */
  writeIn(tx: SqlExecutor, id: string, token: string, write: WorkflowWrite, checkSession = false): Promise<boolean> {
    return this.writeAlone(tx, prepare(id, token, write), checkSession);
  }

  private sendBatch(writes: PendingWrite[]): Promise<boolean[]> {
    if (!writes.some(changesRow)) return retryOnLockContention(() => this.journalOnly(writes));
    const fenced = this.server.oneRoundTripBatches
      ? () => this.fencedBlock(writes)
      : () => this.executor.transaction((tx) => this.fencedUpdate(tx, writes), { isolation: 'session', held: true });
    // Rarely (a lease lost), the UPDATE matched fewer rows than writes: rolled back, and run again
    // reading the locked rows first, to know which writes land.
    const locked = () =>
      this.executor.transaction((tx) => this.lockedUpdate(tx, writes), { isolation: 'session', held: true });
    return retryOnLockContention(() =>
      fenced().catch((error: unknown) => (error === SOME_LEASE_LOST ? locked() : Promise.reject(error))),
    );
  }

  /**
   * Writes of journal entries alone. One write: one statement that commits on its own. Several:
   * the statement in a transaction (at the session's level: it only locks rows by primary key), so
   * that when some write found another token, the tokens read after it are, for every write that
   * landed, the one it landed under (its instance row stays locked until the commit): a write
   * whose lease was taken over right after the insert still answers that it landed.
   */
  private journalOnly(writes: PendingWrite[]): Promise<boolean[]> {
    if (writes.length === 1 && writes[0]!.journal.length > 0) {
      const [write] = writes as [PendingWrite];
      const { sql, params } = fencedJournalInsert(this.tables.journal, this.tables.instances, [
        { id: write.id, token: write.token, rows: write.journal },
      ]);
      // Its rows all went in (rowCount counts each at least once) or none did.
      return this.executor.query(sql, params, repeatedOn(this.server)).then(({ rowCount }) => [rowCount > 0]);
    }
    if (this.server.oneRoundTripBatches && writes.every((write) => write.journal.length > 0))
      return this.journalReturning(writes);
    return this.executor.transaction((tx) => this.journalBatch(tx, writes), { isolation: 'session', held: true });
  }

  /**
   * `journalOnly()` on MariaDB: the statement alone, committing on its own, answering the
   * instance of each row it inserted or replaced. A write landed exactly when its instance is
   * among them: what happens to its lease after the statement changes nothing of that answer.
   */
  private async journalReturning(writes: PendingWrite[]): Promise<boolean[]> {
    const { sql, params } = fencedJournalInsert(
      this.tables.journal,
      this.tables.instances,
      writes.map((write) => ({ id: write.id, token: write.token, rows: write.journal })),
    );
    const { rows } = await this.executor.query(`${sql} RETURNING instance_id`, params, repeatedOn(this.server));
    const landed = new Set(rows.map((row) => String(row.instance_id)));
    return writes.map((write) => landed.has(write.id));
  }

  private async journalBatch(tx: SqlExecutor, writes: PendingWrite[]): Promise<boolean[]> {
    const withRows = writes.filter((write) => write.journal.length > 0);
    const expected = withRows.reduce((sum, write) => sum + write.journal.length, 0);
    if (withRows.length > 0) {
      const { sql, params } = fencedJournalInsert(
        this.tables.journal,
        this.tables.instances,
        withRows.map((write) => ({ id: write.id, token: write.token, rows: write.journal })),
      );
      const { info } = await tx.query(sql, params);
      // The SELECT gave every row: every write matched its token and landed.
      if (insertedRecords(info) === expected && withRows.length === writes.length) return writes.map(() => true);
    }
    // Some write found another token (or the answer doesn't say). The rows of the writes that
    // landed are locked since the insert, so their tokens are still the writers'; a token never
    // comes back once replaced, so one that is not the writer's was not during the insert either.
    const { rows } = await tx.query(
      this.sql.lockedTokens(writes.length),
      writes.map((write) => write.id),
    );
    const tokens = new Map(rows.map((row) => [String(row.id), row.lease_token]));
    return writes.map((write) => tokens.get(write.id) === write.token);
  }

  /**
   * Writes that change instances, in `tx`: one `UPDATE` fenced by each write's token (rows
   * matched, counted with `FOUND_ROWS`, are the writes that landed; a write that changes only its
   * journal matches without changing its row), then the journal entries. Throws
   * `SOME_LEASE_LOST`, rolling it all back, when a write found another token.
   */
  private async fencedUpdate(tx: SqlExecutor, writes: PendingWrite[]): Promise<boolean[]> {
    const matched = await this.updateInstances(
      tx,
      writes.map((write) => ({ id: write.id, token: write.token, changes: this.changes(write, false) })),
    );
    if (matched !== writes.length) throw SOME_LEASE_LOST;
    await upsertJournal(
      tx,
      this.tables.journal,
      writes.flatMap((write) => write.journal),
    );
    return writes.map(() => true);
  }

  /**
   * `fencedUpdate()` on MariaDB, in one round trip: the same `UPDATE` and journal upsert in a
   * transaction that a compound statement opens and commits. When the `UPDATE` matched fewer rows
   * than writes (`ROW_COUNT()` counts rows matched, the pool keeping mysql2's `FOUND_ROWS` flag),
   * it signals `LEASE_LOST_SIGNAL`; any error rolls the whole back (see `compoundTransaction()`).
   */
  private async fencedBlock(writes: PendingWrite[]): Promise<boolean[]> {
    const update = instanceUpdateStatement(
      this.tables.instances,
      writes.map((write) => ({ id: write.id, token: write.token, changes: this.changes(write, false) })),
    );
    const journal = upsertJournalStatement(
      this.tables.journal,
      writes.flatMap((write) => write.journal),
    );
    const params: unknown[] = [];
    let body = '';
    if (update) {
      body += `${update.sql};\nIF ROW_COUNT() <> ? THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '${LEASE_LOST_SIGNAL}'; END IF;\n`;
      params.push(...update.params, writes.length);
    }
    if (journal) {
      body += `${journal.sql};\n`;
      params.push(...journal.params);
    }
    try {
      await this.executor.query(compoundTransaction(body), params, repeatedOn(this.server));
    } catch (error) {
      throw (error as { message?: unknown })?.message === LEASE_LOST_SIGNAL ? SOME_LEASE_LOST : error;
    }
    return writes.map(() => true);
  }

  /** The same writes, when some lease was lost: the rows locked and read first (in key order), then the writes that hold theirs. */
  private async lockedUpdate(tx: SqlExecutor, writes: PendingWrite[]): Promise<boolean[]> {
    const { rows } = await tx.query(
      this.sql.lockedTokens(writes.length),
      writes.map((write) => write.id),
    );
    const tokens = new Map(rows.map((row) => [String(row.id), row.lease_token]));
    const landed = writes.map((write) => tokens.get(write.id) === write.token);
    const mine = writes.filter((_, index) => landed[index]);
    await this.updateInstances(
      tx,
      mine.map((write) => ({ id: write.id, token: null, changes: this.changes(write, false) })),
    );
    await upsertJournal(
      tx,
      this.tables.journal,
      mine.flatMap((write) => write.journal),
    );
    return landed;
  }

  private async writeAlone(tx: SqlExecutor, pending: PendingWrite, checkSession = false): Promise<boolean> {
    const { id, token, write } = pending;
    const waits = write.release?.waits ?? [];
    const { signal } = write;
    const row = await this.lockRow(tx, id, checkSession);
    if (!row || row.lease_token !== token) return false;
    let signalAbove = false;
    const runs = toNumber(row.runs);
    if (waits.length > 0) {
      // The waits first: a signal that comes after the check below waits for this commit to wake it.
      const hashes = [
        ...new Map(waits.map((wait) => topicHash(wait.name, wait.key)).map((h) => [h.toString('hex'), h])).values(),
      ];
      const held = await this.registerWaits(tx, id, runs, hashes);
      signalAbove = held || (await this.signalAbove(tx, hashes, write.release!.signalCursor));
    }
    await this.updateInstances(tx, [{ id, token: null, changes: this.changes(pending, signalAbove) }]);
    await upsertJournal(tx, this.tables.journal, pending.journal);
    if (waits.length > 0) await this.dropEarlierWaits(tx, id, runs);
    if (signal) await this.signals.insert(tx, signal);
    return true;
  }

  /**
   * Registers the waits on `hashes` for run `runs`, never waiting for a signal: an earlier wait's
   * row of the same topic that a signal's wake-up holds (it reads the topic's waits shared until it
   * commits) is left as it is, and the answer is `true`: that signal is in flight, so the instance
   * is due now, and its next suspension registers the wait.
   */
  private async registerWaits(tx: SqlExecutor, id: string, runs: number, hashes: Buffer[]): Promise<boolean> {
    const hex = (row: Record<string, unknown>) => Buffer.from(row.topic_hash as Uint8Array).toString('hex');
    const { rows: existing } = await tx.query(this.sql.waitsOf(hashes.length), [id, ...hashes]);
    const { rows: free } = await tx.query(this.sql.freeWaitsOf(hashes.length), [id, ...hashes]);
    const freed = new Set(free.map(hex));
    const held = new Set(existing.map(hex).filter((key) => !freed.has(key)));
    const register = hashes.filter((hash) => !held.has(hash.toString('hex')));
    if (register.length > 0) {
      await tx.query(
        this.sql.registerWaits(register.length),
        register.flatMap((hash) => [hash, id, runs]),
      );
    }
    return held.size > 0;
  }

  /**
   * Whether a signal of the topics above `cursor` is committed or still in flight: a locking read
   * that never waits (NOWAIT), so a suspension never waits for a signal (which may wait for it).
   * A row it can't lock is a signal in flight; only that statement rolls back.
   */
  private async signalAbove(tx: SqlExecutor, hashes: Buffer[], cursor: number): Promise<boolean> {
    try {
      const { rows } = await tx.query(this.sql.signalAbove(hashes.length), [...hashes, cursor]);
      return rows.length > 0;
    } catch (error) {
      if (isLockNotGranted(error)) return true;
      throw error;
    }
  }

  /**
   * Deletes the waits of earlier suspensions that no transaction holds (a signal's wake-up reads
   * them shared until it commits): never waiting for one. Those left never match (lower `runs`) and
   * go with a later suspension or the instance.
   */
  private async dropEarlierWaits(tx: SqlExecutor, id: string, runs: number): Promise<void> {
    const { rows } = await tx.query(this.sql.earlierWaits, [id, runs]);
    if (rows.length === 0) return;
    await tx.query(this.sql.dropWaits(rows.length), [id, ...rows.map((row) => row.topic_hash)]);
  }

  /**
   * The row of `id`, locked. With `checkSession`, only while `tx`'s session is in a transaction:
   * InnoDB rolls a whole transaction back under a deadlock (and a lock-wait timeout, with
   * `innodb_rollback_on_timeout`), and a statement that commits implicitly (DDL) ends it, leaving
   * the session outside any; the write's statements would then each commit on their own, the
   * step's result recorded without the rows it stands for. Out of one, throws
   * `outsideStepTransaction()` before the instance or its journal is written.
   *
   * MariaDB says so in this very statement (`@@in_transaction`, read rather than put in the
   * `WHERE`: an empty answer would not tell a lost lease from a lost transaction), at no cost: the
   * write's later statements follow on the same connection once it answered. MySQL 8.0 has no
   * such variable; a savepoint tells first, in two statements (`outsideTransaction()`). The one
   * statement that MySQL answers differently in a transaction, `SET TRANSACTION`, does so by
   * failing there: a failed statement on every step, in the ORM's and the server's error logs.
   */
  private async lockRow(tx: SqlExecutor, id: string, checkSession = false): Promise<SqlRow | undefined> {
    const inline = checkSession && this.server.inTransactionVariable;
    if (checkSession && !inline) {
      const outside = await outsideTransaction(tx);
      if (outside) throw outsideStepTransaction(outside);
    }
    const { rows } = await tx.query(this.sql.lockRow(inline), [id]);
    if (inline && rows[0] && toNumber(rows[0].in_transaction) !== 1) throw outsideStepTransaction();
    return rows[0];
  }

  /**
   * What the write sets. On release: the waits, no lease, and `wakeAt` now when a signal the
   * execution never saw matches a new wait (`signalAbove`) or a cancel waits for an instance that
   * goes (or stays) suspended to notice it (a terminate, one that goes or stays compensating), else
   * the release's `wakeAt`; decided in the statement from the row's `cancel_requested` and
   * `terminate_requested` (and its status, when the write keeps it), so nothing needs
   * reading first (see `wakeAt()`). `updated_at` when anything besides the journal changes.
   */
  private changes({ write, fields }: PendingWrite, signalAbove: boolean): Change[] {
    const changes: Change[] = fields.map(([column, value]) => [column, '?', [value]]);
    const { release } = write;
    if (release) {
      changes.push(
        ['wait_topics', '?', [JSON.stringify(release.waits.map((wait) => signalTopic(wait.name, wait.key)))]],
        ['lease_token', 'NULL', []],
        ['lease_until', 'NULL', []],
        ['wake_at', ...wakeAt(write.status, signalAbove ? write.now : null, write.now, release.wakeAt)],
      );
    }
    if (changes.length > 0) changes.push(['updated_at', '?', [write.now]]);
    return changes;
  }

  /**
   * Applies each instance's changes in one statement: per column, a \`CASE id\` over the instances
   * that set it (the others keep theirs). With tokens, only rows still leased under theirs match.
   * Resolves to the rows matched (every row of `updates` when there are no tokens).
   */
  private async updateInstances(tx: SqlExecutor, updates: readonly InstanceUpdate[]): Promise<number> {
    const statement = instanceUpdateStatement(this.tables.instances, updates);
    if (!statement) return updates.length;
    return (await tx.query(statement.sql, statement.params)).rowCount;
  }
}

/**
 * `wake_at` on release: `now` when a signal the execution never saw matches a new wait (`signalAt`),
 * else `now` when a cancel waits for an instance that goes (or stays) suspended to notice it, or a
 * terminate for one that goes (or stays) compensating (a compensation's backoff must not hold it
 * back), else the release's `wakeAt`. With the write's own status known, the cancel's case is decided here; the
 * row's status only when the write keeps it.
 */
function wakeAt(
  status: WorkflowWrite['status'],
  signalAt: number | null,
  now: number,
  wakeAt: number | null,
): [sql: string, params: unknown[]] {
  if (signalAt !== null) return ['?', [signalAt]];
  if (status === undefined) {
    return [
      "CASE WHEN (cancel_requested = 1 AND status = 'suspended') OR (terminate_requested = 1 AND status = 'compensating') THEN ? ELSE ? END",
      [now, wakeAt],
    ];
  }
  if (status === 'suspended') return ['CASE WHEN cancel_requested = 1 THEN ? ELSE ? END', [now, wakeAt]];
  if (status === 'compensating') return ['CASE WHEN terminate_requested = 1 THEN ? ELSE ? END', [now, wakeAt]];
  return ['?', [wakeAt]];
}

/**
 * The refusal of a `ctx.transaction()` step's write whose session is no longer in the step's
 * transaction (see `MySqlWrites.lockRow()`): the attempt fails, and nothing of the write commits.
 */
function outsideStepTransaction(cause?: Error): Error {
  return new Error(
    "The connection of this ctx.transaction() step is no longer in a transaction, so the step's result is not recorded and the attempt fails. " +
      'The server rolled the transaction back under a statement of the callback whose error the callback caught and went on ' +
      '(a deadlock, 1213; a lock-wait timeout, 1205, with innodb_rollback_on_timeout), or a statement committed it implicitly (DDL, LOCK TABLES). ' +
      "The callback's statements after that committed each on its own. Let such errors propagate out of the callback, and keep statements that commit implicitly out of it.",
    cause ? { cause } : undefined,
  );
}

/** Thrown inside a batch's transaction to roll it back when a write of the batch found another token. */
const SOME_LEASE_LOST = new Error('a write of the batch found another lease token');

/** The message a compound statement's `SIGNAL` gives when its `UPDATE` matched fewer rows than writes. */
const LEASE_LOST_SIGNAL = 'nest-workflows: a write of the batch found another lease token';
