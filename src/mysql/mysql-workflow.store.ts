import { mysqlTransactionExecutor, sessionIsolation } from './from-mysql2.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { handleLibrary } from '../sql/handles/handle-executor.js';
import { MYSQL_TRANSACTIONS, transactionsFor } from '../sql/handles/handle-kind.js';
import { oneAtATime } from '../sql/one-at-a-time.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { checkTransactions, explainOtherMysqlDatabase, inSavepoint } from './mysql-app-transaction.js';
import { checkMysqlAnswers, explainMysqlConnectionError } from './connection-error.js';
import { durationOr, type Duration } from '../time/duration.js';
import { MYSQL_INPUT } from './key-limits.js';
import { MySqlClaims } from './mysql-claim.js';
import { MySqlCreates } from './mysql-creates.js';
import { MYSQL_DIALECT } from './mysql-dialect.js';
import { journalRows, upsertJournal } from './mysql-journal.js';
import { MySqlLocks, topicHash } from './mysql-locks.js';
import { MYSQL_MIGRATIONS, mysqlMigrationDialect, mysqlMigrationSql } from './mysql-migrations.js';
import { retryOnLockContention } from './mysql-retry.js';
import { requestCancel } from './mysql-cancel-notices.js';
import { MySqlPayloadRewrite } from './mysql-payload-rewrite.js';
import { MySqlPurge } from './mysql-purge.js';
import { MySqlSchedules } from './mysql-schedules.js';
import { MySqlSignals } from './mysql-signals.js';
import { MySqlStatementTimeout } from './mysql-statement-timeout.js';
import {
  INSTANCE_COLUMNS,
  mysqlTables,
  placeholders,
  REOPEN_CANCEL_FLAGS,
  UNFINISHED,
  type MySqlTables,
} from './mysql-tables.js';
import { MySqlWakePoller, type WakePollInterval } from './mysql-wake-poller.js';
import { MySqlEndPoller, type EndPollInterval } from './mysql-end-poller.js';
import { MySqlWrites } from './mysql-writes.js';
import { countDue, countUndeclaredDue } from './mysql-undeclared-due.js';
import { COMMON_GROUND, detectServerFeatures, repeatedOn, type MySqlServerFeatures } from './mysql-server.js';
import { checkDelayRange } from '../sql/delay-range.js';
import { listInstancesStatement } from '../sql/list-queries.js';
import { MigrationRunner } from '../sql/migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { SqlWorkflowStoreBase, type SqlWorkflowStoreOptions } from '../sql/sql-workflow-store.js';
import { distinctEntries } from '../sql/distinct-entries.js';
import { untakenSignals } from '../sql/untaken-signals.js';
import { initSchema } from '../sql/store-schema.js';
import { toBoolean, toInstance, toJson, toWaits } from '../sql/workflow-rows.js';
import {
  FINISHED_STATUSES,
  type WorkflowInstance,
  type WorkflowJournalEntry,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type * as Store from '../storage/workflow-store.js';
import type { WorkflowStoreTransactionOptions } from '../storage/workflow-store-transactions.js';

const STORE = 'MySqlWorkflowStore';
/** A journal entry's `signalId` (`untakenSignals()`): the column is the entry's JSON text. */
const ENTRY_SIGNAL_ID = {
  text: (entry: string) => entry,
  value: (entry: string) => `CAST(JSON_UNQUOTE(JSON_EXTRACT(${entry}, '$.signalId')) AS SIGNED)`,
};

/** What `new MySqlWorkflowStore(options)` takes: `executor` is `fromMysql2(pool)`; `schema` prefixes the tables. */
export interface MySqlWorkflowStoreOptions extends SqlWorkflowStoreOptions {
  /**
   * How long startup (`init()`) waits for the server's first answer before failing with an error
   * that names the server: a host that accepts connections and never answers would otherwise hold
   * startup for the pool's `connectTimeout` (10 s by default) on every attempt. Migrating, once the
   * server answered, is not limited. Default `'5s'`.
   */
  startupTimeout?: Duration;
  /**
   * How often `listen()` polls for work made due by other processes (MySQL has no LISTEN/NOTIFY):
   * `minDelay` ms after something became due, doubling to at most `2 * minDelay` ms while things
   * keep becoming due (within the last second), and to `maxDelay` ms once a second passes with
   * nothing. Default `{ minDelay: 5, maxDelay: 25 }`.
   */
  wakePoll?: WakePollInterval;
  /**
   * How `ctx.transaction()` opens its transactions, and so what its callbacks get as `tx`. Default:
   * the executor's (with `fromMysql2()`, a mysql2 connection). An ORM's, to get its own handle:
   * `typeormTransactions(dataSource)`, `prismaTransactions(prisma)`, `drizzleTransactions(db)`,
   * `kyselyTransactions(db)` or `mikroOrmTransactions(em)` from this entry, over the store's
   * database. Checked at startup: an ORM on a database without the store's tables fails `init()`.
   */
  transactions?: Pick<SqlExecutor, 'transaction'>;
  /**
   * How often a `handle.result()` waiting here asks whether the instances it waits for ended in
   * another process (MySQL has no LISTEN/NOTIFY; ends in this process arrive at once): `minDelay`
   * ms after a wait began or an instance ended, doubling to `maxDelay` ms while none does. One
   * statement per poll for all the waits of the process; nothing while nobody waits. Default
   * `{ minDelay: 5, maxDelay: 50 }`.
   */
  endPoll?: EndPollInterval;
}

/**
 * The MySQL / MariaDB `Store.WorkflowStore` (MySQL 8.0+, MariaDB 10.6+; one code path for both). Claims
 * lease with `FOR UPDATE SKIP LOCKED`; every write is fenced by the lease token under the row's
 * lock; signals and suspensions of one topic are ordered by that topic's lock row; deadlocks and
 * lock-wait timeouts are retried inside the store. Payloads are kept as text, exactly as written.
 * Keys longer than `MYSQL_KEY_LIMITS` are refused with a `RangeError` before anything is written.
 */
export class MySqlWorkflowStore extends SqlWorkflowStoreBase implements Store.WorkflowStore {
  private readonly tables: MySqlTables;
  private readonly signalsOf: MySqlSignals;
  private readonly claims: MySqlClaims;
  private readonly creates: MySqlCreates;
  private readonly writes: MySqlWrites;
  protected readonly scheduleStore: MySqlSchedules;
  private poller: MySqlWakePoller;
  /** What the server offers beyond the common ground: found by `init()`. */
  private server: MySqlServerFeatures = COMMON_GROUND;
  private readonly wakePoll: WakePollInterval | undefined;
  private readonly statementTimeout: MySqlStatementTimeout;
  private readonly transactions: Pick<SqlExecutor, 'transaction'> | null;
  private readonly purges: MySqlPurge;
  private endPoller: MySqlEndPoller;
  private readonly endPoll: EndPollInterval | undefined;
  protected readonly payloadRewrites: MySqlPayloadRewrite;
  private readonly startupTimeout: number;

  constructor(options: MySqlWorkflowStoreOptions) {
    super(
      options,
      STORE,
      "fromMysql2(pool) from '@nestjs/workflows/mysql'",
      'It looks like a mysql2 pool: wrap it, `executor: fromMysql2(pool)`.',
      ['wakePoll', 'transactions', 'endPoll', 'startupTimeout'],
    );
    if (options.transactions !== undefined && typeof options.transactions?.transaction !== 'function') {
      throw new TypeError(
        `${STORE}: \`transactions\` must be what typeormTransactions(), prismaTransactions(), drizzleTransactions(), kyselyTransactions() ` +
          'or mikroOrmTransactions() return.',
      );
    }
    this.transactions = options.transactions ? transactionsFor(options.transactions, MYSQL_TRANSACTIONS) : null;
    this.tables = mysqlTables(this.schema);
    const locks = new MySqlLocks(this.tables.locks);
    this.signalsOf = new MySqlSignals(this.tables, locks);
    this.purges = new MySqlPurge(this.tables, this.signalsOf, locks);
    this.claims = new MySqlClaims(this.tables, locks);
    this.creates = new MySqlCreates(this.executor, this.tables);
    this.writes = new MySqlWrites(this.executor, this.tables, locks, this.signalsOf);
    this.scheduleStore = new MySqlSchedules(this.executor, this.tables, this.creates);
    this.payloadRewrites = new MySqlPayloadRewrite(this.executor, this.tables);
    this.wakePoll = checkDelayRange(options.wakePoll, 'wakePoll', STORE);
    this.endPoll = checkDelayRange(options.endPoll, 'endPoll', STORE);
    this.statementTimeout = new MySqlStatementTimeout();
    this.startupTimeout = durationOr(options.startupTimeout, 5_000, `${STORE} option "startupTimeout"`);
    this.poller = this.wakePoller();
    this.endPoller = new MySqlEndPoller(this.executor, this.tables.instances, this.endPoll);
  }

  private wakePoller(): MySqlWakePoller {
    return new MySqlWakePoller(this.executor, this.tables.instances, this.tables.cancelNotices, this.wakePoll, () =>
      repeatedOn(this.server),
    );
  }

  /**
   * Every migration as one SQL script for `schema` (default `'nest_workflows'`), for your own
   * migration tool: creates the history table, runs and records each migration.
   */
  static migrationSql(schema: string = DEFAULT_SCHEMA): string {
    return mysqlMigrationSql(validateSchemaName(schema, STORE));
  }

  /**
   * Checks that the server answers (within `startupTimeout`), migrates (or, with `migrate: false`,
   * checks the tables are current), and finds what the server offers beyond MySQL 8.0's common
   * ground (see `MySqlServerFeatures`: on MariaDB, each batch of writes is one round trip). Called
   * once at startup.
   */
  async init(): Promise<void> {
    await checkMysqlAnswers(this.executor, this.startupTimeout, this.schema);
    try {
      await initSchema({
        runner: this.migrationRunner(),
        migrate: this.migrateOption,
        store: STORE,
        schema: this.schema,
        cliFlag: '--mysql',
      });
    } catch (error) {
      throw explainMysqlConnectionError(error, this.schema, this.executor.target);
    }
    this.server =
      this.claims.server =
      this.writes.server =
      this.creates.server =
        await detectServerFeatures(this.executor);
    if (this.transactions) await checkTransactions(this.transactions, STORE, this.schema, this.tables.instances);
  }

  protected migrationRunner(): MigrationRunner {
    return new MigrationRunner(this.executor, mysqlMigrationDialect(this.schema), MYSQL_MIGRATIONS, {
      store: STORE,
      schema: this.schema,
    });
  }

  async create(instance: Store.NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    MYSQL_INPUT.newInstance(instance);
    return this.creates.create(instance);
  }

  /**
   * `create()` in the application's transaction: `transaction` is the mysql2 connection it began
   * the transaction on (or a `SqlExecutor` for it). Insert-or-ignore, so it never fails that
   * transaction on a repeated id.
   */
  async createInTransaction(
    transaction: unknown,
    instance: Store.NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    MYSQL_INPUT.newInstance(instance);
    return this.inApplicationTransaction(transaction, async (executor) =>
      this.creates.createInApplication(executor, instance),
    );
  }

  /** `fn` on the application's transaction, in a savepoint; a failure that shows it is on another database says so. */
  private async inApplicationTransaction<T>(
    transaction: unknown,
    fn: (executor: SqlExecutor) => Promise<T>,
  ): Promise<T> {
    try {
      // One call at a time per transaction: their savepoints must not interleave (see oneAtATime()).
      return await oneAtATime(transaction, async () =>
        inSavepoint(await mysqlTransactionExecutor(transaction, STORE), fn),
      );
    } catch (error) {
      throw explainOtherMysqlDatabase(error, STORE, this.schema, handleLibrary(transaction, 'mysql2')) ?? error;
    }
  }

  async get(id: string, options?: { journal?: boolean }): Promise<Store.WorkflowInstanceDetails | null> {
    const repeated = repeatedOn(this.server);
    const { rows } = await this.executor.query(
      `SELECT ${INSTANCE_COLUMNS}, wait_topics FROM ${this.tables.instances} WHERE id = ?`,
      [id],
      repeated,
    );
    const row = rows[0];
    if (!row) return null;
    const details: Store.WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
    if (options?.journal) {
      const journal = await this.executor.query(
        `SELECT entry FROM ${this.tables.journal} WHERE instance_id = ? ORDER BY seq`,
        [id],
        repeated,
      );
      details.journal = journal.rows.map((entry) => JSON.parse(String(entry.entry)) as WorkflowJournalEntry);
    }
    return details;
  }

  async list(query: Store.WorkflowListQuery): Promise<WorkflowInstance[]> {
    const { sql, params } = listInstancesStatement(
      MYSQL_DIALECT,
      `SELECT ${INSTANCE_COLUMNS} FROM ${this.tables.instances}`,
      query,
    );
    const { rows } = await this.executor.query(sql, params);
    return rows.map(toInstance);
  }

  countDue(now: number, cap: number): Promise<number> {
    return countDue(this.executor, this.tables.instances, now, cap);
  }

  async countUndeclaredDue(query: Store.WorkflowUndeclaredDueQuery): Promise<Store.WorkflowUndeclaredDue[]> {
    return countUndeclaredDue(this.executor, this.tables.instances, query);
  }

  requestCancel(id: string, request: Store.WorkflowCancelRequest): Promise<boolean> {
    return requestCancel(this.executor, this.tables, id, request);
  }

  async reopen(id: string, reopen: Store.WorkflowReopen): Promise<boolean> {
    MYSQL_INPUT.entries(id, reopen.entries);
    const { instances, journal } = this.tables;
    const entries = journalRows(id, distinctEntries(reopen.entries));
    const error = toJson(reopen.error);
    return retryOnLockContention(() =>
      this.executor.transaction(async (tx) => {
        const { rows } = await tx.query(
          `SELECT id FROM ${instances} WHERE id = ? AND status = ? AND runs = ? AND NOT (lease_token IS NOT NULL AND lease_until >= ?) FOR UPDATE`,
          [id, reopen.expect.status, reopen.expect.runs, reopen.now],
        );
        if (rows.length === 0) return false;
        // Read once the row is locked, each statement seeing what committed before it: a purge() or delete() since the caller's check refuses.
        if (reopen.awaitedChildren?.length && !(await this.endsReachable(tx, reopen.awaitedChildren))) return false;
        const deadline = reopen.deadline !== undefined ? ', deadline = ?' : '';
        await tx.query(
          `UPDATE ${instances} SET status = ?, error = ?${deadline}, ${REOPEN_CANCEL_FLAGS},
  lease_token = NULL, lease_until = NULL, wake_at = ?, updated_at = ? WHERE id = ?`,
          [
            reopen.status,
            error,
            ...(deadline ? [reopen.deadline] : []),
            reopen.status,
            reopen.status,
            reopen.now,
            reopen.now,
            id,
          ],
        );
        await upsertJournal(tx, journal, entries);
        const retract = reopen.retractSignal;
        if (retract)
          await tx.query(`DELETE FROM ${this.tables.signals} WHERE name = ? AND dedupe_id = ?`, [
            retract.name,
            retract.dedupeId,
          ]);
        return true;
      }),
    );
  }

  /** Whether each of `children` exists and is unfinished or has its end stored (`reopen`'s `awaitedChildren`). */
  private async endsReachable(tx: SqlExecutor, children: readonly string[]): Promise<boolean> {
    const { rows } = await tx.query(
      `SELECT id, status FROM ${this.tables.instances} WHERE id IN (${placeholders(children.length)})`,
      [...children],
    );
    if (rows.length < children.length) return false;
    const ended = rows
      .filter((row) => FINISHED_STATUSES.includes(row.status as WorkflowStatus))
      .map((row) => topicHash(CHILD_ENDED_SIGNAL, row.id as string));
    if (ended.length === 0) return true;
    const ends = await tx.query(
      `SELECT DISTINCT topic_hash FROM ${this.tables.signals} WHERE topic_hash IN (${placeholders(ended.length)})`,
      ended,
    );
    return ends.rows.length === ended.length;
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    if (statuses.length === 0) return false;
    const { instances } = this.tables;
    // Never a child whose parent is unfinished; a join, as MySQL refuses a subquery on the table a DELETE deletes from.
    const { rowCount } = await retryOnLockContention(() =>
      this.executor.query(
        `DELETE i FROM ${instances} i LEFT JOIN ${instances} p ON p.id = i.parent_id AND p.status IN ${UNFINISHED}
  WHERE i.id = ? AND i.status IN (${placeholders(statuses.length)}) AND p.id IS NULL`,
        [id, ...statuses],
      ),
    );
    return rowCount > 0;
  }

  async signal(signal: Store.NewWorkflowSignal): Promise<Store.WorkflowSignalResult> {
    MYSQL_INPUT.signal(signal);
    return retryOnLockContention(() =>
      this.executor.transaction((tx) => this.signalsOf.insert(tx, signal), { held: true }),
    );
  }

  /**
   * `signal()` in the application's transaction: `transaction` is the mysql2 connection it began
   * the transaction on (or a `SqlExecutor` for it), whose session is READ COMMITTED (or READ
   * UNCOMMITTED). Under REPEATABLE READ and SERIALIZABLE the wake-up would either read a snapshot
   * older than the topic's lock (and miss instances that suspended meanwhile) or, read as InnoDB
   * runs an UPDATE, take gap locks that hold up suspensions of other topics until the transaction
   * ends: both are refused. The topic's lock is held until that transaction ends, so keep it short.
   */
  async signalInTransaction(
    transaction: unknown,
    signal: Store.NewWorkflowSignal,
  ): Promise<Store.WorkflowSignalResult> {
    MYSQL_INPUT.signal(signal);
    return this.inApplicationTransaction(transaction, async (executor) => {
      await this.checkReadCommitted(executor);
      return this.signalsOf.insert(executor, signal);
    });
  }

  private async checkReadCommitted(executor: SqlExecutor): Promise<void> {
    const isolation = await sessionIsolation(executor);
    if (isolation !== 'READ-COMMITTED' && isolation !== 'READ-UNCOMMITTED') {
      throw new WorkflowError(
        `${STORE}: signal(..., { transaction }) needs a READ COMMITTED transaction; this connection's session is ${isolation || 'of an unknown level'}. ` +
          'Under a snapshot the wake-up would miss instances that suspended meanwhile, and its locking reads would hold up ' +
          'other topics. Run `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED` on the connection before ' +
          '`beginTransaction()`, or send the signal without `transaction`.',
      );
    }
  }

  untakenSignals(query: Store.WorkflowUntakenSignalQuery): Promise<Store.WorkflowUntakenSignal[]> {
    return untakenSignals(this.executor, MYSQL_DIALECT, this.schema, ENTRY_SIGNAL_ID, query);
  }

  signals(query: Store.WorkflowSignalQuery): Promise<Store.WorkflowSignalRecord[]> {
    return this.signalsOf.read(this.executor, query);
  }

  purge(query: Store.WorkflowPurgeQuery): Promise<Store.WorkflowPurgeResult> {
    return this.purges.purge(this.executor, query);
  }

  async claim(request: Store.WorkflowClaimRequest): Promise<Store.WorkflowClaim> {
    MYSQL_INPUT.token(request.token, request.owner);
    return this.claims.claimOn(this.executor, request, () => this.signalsOf.lastId(this.executor));
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<Store.WorkflowLeaseFlags | null> {
    const { instances } = this.tables;
    const { rowCount } = await retryOnLockContention(() =>
      this.executor.query(`UPDATE ${instances} SET lease_until = ? WHERE id = ? AND lease_token = ?`, [
        leaseUntil,
        id,
        token,
      ]),
    );
    if (rowCount === 0) return null;
    const { rows } = await this.executor.query(
      `SELECT cancel_requested, terminate_requested FROM ${instances} WHERE id = ? AND lease_token = ?`,
      [id, token],
    );
    const row = rows[0];
    return row
      ? { cancelRequested: toBoolean(row.cancel_requested), terminateRequested: toBoolean(row.terminate_requested) }
      : null;
  }

  /** Fenced by the lease token under the row's lock; see `MySqlWrites` for batching and the topic locks. */
  async write(id: string, token: string, write: Store.WorkflowWrite): Promise<boolean> {
    MYSQL_INPUT.write(id, write);
    return this.writes.write(id, token, write);
  }

  /**
   * `ctx.transaction()`: `body` runs in a transaction of the store's executor (a connection of its
   * pool), and `tx.write()` is `write()` in that transaction, fenced by the lease under the
   * instance row's lock, which it holds until the commit. With a timeout, the server also bounds
   * the statements (a second past it; see `MySqlStatementTimeout` for what MySQL and MariaDB each
   * bound). A transaction the server rolled back under the callback commits nothing more:
   * `fromMysql2()` refuses its statements (`ServerRollbackWatch`), and with the `transactions`
   * option's ORM the step's result is not written outside it (`MySqlWrites.writeIn()`).
   */
  transaction<T>(
    id: string,
    token: string,
    body: (tx: Store.WorkflowStoreTransaction) => Promise<T>,
    options?: WorkflowStoreTransactionOptions,
  ): Promise<T> {
    return (this.transactions ?? this.executor).transaction((tx) =>
      this.statementTimeout.around(tx, options?.timeout ?? null, () =>
        body({
          handle: tx.handle ?? tx,
          write: async (write) => {
            MYSQL_INPUT.write(id, write);
            return this.writes.writeIn(tx, id, token, write, this.transactions !== null);
          },
        }),
      ),
    );
  }

  /**
   * Calls `listener` when another process (or this one) made work due, found by a short adaptive
   * poll (see `MySqlWakePoller`): MySQL has no LISTEN/NOTIFY. The poll reads no marker while every
   * listener's `needsWakeUps()` answers `false` (a worker with a backlog claims on its own). A
   * cancel or terminate of an instance in `options.held()` is named (`'cancel'`) through the
   * counter the poll reads beside the marker (see `MySqlCancelNotices`), also while it rests.
   */
  listen(
    listener: (id?: string, kind?: Store.WorkflowWakeUpKind) => void,
    options?: Store.WorkflowListenOptions,
  ): Promise<() => Promise<void>> {
    return this.poller.add(listener, options);
  }

  /**
   * Calls `listener` with `id` once the instance `id` ended in any process, found by a short
   * adaptive poll of the instances this process waits for (see `MySqlEndPoller`). Without `id` it
   * never calls it: MySQL has no feed of every end.
   */
  listenForEnds(listener: (id: string | null) => void, id?: string): Promise<() => Promise<void>> {
    return this.endPoller.add(listener, id);
  }

  /**
   * Stops the wake-up and end polls (every listener is dropped) and gives back the connection the
   * executor keeps between the store's transactions. The application's pool stays open: it owns
   * it. The store can be used again, as `PostgresWorkflowStore` can: a later `listen()` or
   * `listenForEnds()` (an application started again with the same store instance) starts a new
   * poll, and a later transaction holds a connection again.
   */
  async close(): Promise<void> {
    const [poller, endPoller] = [this.poller, this.endPoller];
    this.poller = this.wakePoller();
    this.endPoller = new MySqlEndPoller(this.executor, this.tables.instances, this.endPoll);
    poller.close();
    endPoller.close();
    this.executor.close?.();
  }
}
