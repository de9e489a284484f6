import { MySqlBulkChanges } from './mysql-bulk-changes.js';
import { MySqlPauses } from './mysql-pauses.js';
import { mysqlProcesses } from './mysql-processes.js';
import type { SqlProcesses } from '../sql/process-records.js';
import { MYSQL_TRANSACTIONS, transactionsFor } from '../sql/handles/handle-kind.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { checkMysqlAnswers, explainMysqlConnectionError } from './connection-error.js';
import { durationOr, type Duration } from '../time/duration.js';
import { checkTransactions, inApplicationTransaction } from './mysql-app-transaction.js';
import { MYSQL_INPUT } from './key-limits.js';
import { MySqlClaims } from './mysql-claim.js';
import { MySqlCreates } from './mysql-creates.js';
import { MySqlCallbacks } from './mysql-callbacks.js';
import { MySqlStreams } from './mysql-streams.js';
import { MySqlForks } from './mysql-forks.js';
import { MySqlDeletes } from './mysql-deletes.js';
import { MySqlLeaseRenewal } from './mysql-lease-renewal.js';
import { MySqlLocks } from './mysql-locks.js';
import { MYSQL_MIGRATIONS, mysqlMigrationDialect, mysqlMigrationSql } from './mysql-migrations.js';
import { MySqlCancelRequests } from './mysql-cancel-requests.js';
import { MySqlPayloadRewrite } from './mysql-payload-rewrite.js';
import { MySqlReads } from './mysql-reads.js';
import { MySqlReopen } from './mysql-reopen.js';
import { MySqlSchedules } from './mysql-schedules.js';
import { MySqlSignals } from './mysql-signals.js';
import { MySqlStatementTimeout } from './mysql-statement-timeout.js';
import { mysqlTables, type MySqlTables } from './mysql-tables.js';
import { MySqlWakePoller, type WakePollInterval } from './mysql-wake-poller.js';
import { MySqlEndPoller, type EndPollInterval } from './mysql-end-poller.js';
import { MySqlWrites } from './mysql-writes.js';
import { COMMON_GROUND, detectServerFeatures, repeatedOn, type MySqlServerFeatures } from './mysql-server.js';
import { checkDelayRange } from '../sql/delay-range.js';
import { MigrationRunner } from '../sql/migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { SqlWorkflowStoreBase, type SqlWorkflowStoreOptions } from '../sql/sql-workflow-store.js';
import { MYSQL_DIALECT } from './mysql-dialect.js';
import { untakenSignals } from '../sql/untaken-signals.js';
import { initSchema } from '../sql/store-schema.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
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
  protected readonly input = MYSQL_INPUT;
  private readonly tables: MySqlTables;
  protected readonly signalsOf: MySqlSignals;
  protected readonly reads: MySqlReads;
  protected readonly cancels: MySqlCancelRequests;
  protected readonly renewals: MySqlLeaseRenewal;
  private readonly claims: MySqlClaims;
  protected readonly creates: MySqlCreates;
  private readonly writes: MySqlWrites;
  protected readonly scheduleStore: MySqlSchedules;
  private poller: MySqlWakePoller;
  /** What the server offers beyond the common ground: found by `init()`. */
  private server: MySqlServerFeatures = COMMON_GROUND;
  private readonly wakePoll: WakePollInterval | undefined;
  private readonly statementTimeout: MySqlStatementTimeout;
  private readonly transactions: Pick<SqlExecutor, 'transaction'> | null;
  protected readonly deletes: MySqlDeletes;
  protected readonly callbacks: MySqlCallbacks;
  protected readonly streams: MySqlStreams;
  protected readonly pauses: MySqlPauses;
  protected readonly processRecords: SqlProcesses;
  protected readonly forks: MySqlForks;
  protected readonly bulkChanges: MySqlBulkChanges;
  protected readonly reopens: MySqlReopen;
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
    this.signalsOf = new MySqlSignals(this.tables, STORE);
    this.reads = new MySqlReads(this.executor, this.tables);
    this.cancels = new MySqlCancelRequests(this.tables);
    this.renewals = new MySqlLeaseRenewal(this.tables);
    this.deletes = new MySqlDeletes(this.tables, this.signalsOf, locks);
    this.callbacks = new MySqlCallbacks(this.executor, this.schema);
    this.streams = new MySqlStreams(this.schema);
    this.pauses = new MySqlPauses(this.tables);
    this.processRecords = mysqlProcesses(this.tables);
    this.forks = new MySqlForks(this.tables);
    this.bulkChanges = new MySqlBulkChanges(this.tables);
    this.reopens = new MySqlReopen(this.tables);
    this.claims = new MySqlClaims(this.tables, locks);
    this.creates = new MySqlCreates(this.executor, this.tables);
    this.writes = new MySqlWrites(this.executor, this.tables, this.signalsOf);
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
      this.reads.server =
      this.signalsOf.server =
        await detectServerFeatures(this.executor);
    if (this.transactions) await checkTransactions(this.transactions, STORE, this.schema, this.tables.instances);
  }

  protected migrationRunner(): MigrationRunner {
    return new MigrationRunner(this.executor, mysqlMigrationDialect(this.schema), MYSQL_MIGRATIONS, {
      store: STORE,
      schema: this.schema,
    });
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
    return this.inApplicationTransaction(transaction, (executor) =>
      this.creates.createInTransaction(executor, instance),
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
    return this.inApplicationTransaction(transaction, (executor) => this.signalsOf.sendInTransaction(executor, signal));
  }

  untakenSignals(query: Store.WorkflowUntakenSignalQuery): Promise<Store.WorkflowUntakenSignal[]> {
    return untakenSignals(this.executor, MYSQL_DIALECT, this.schema, ENTRY_SIGNAL_ID, query);
  }

  protected inApplicationTransaction<T>(transaction: unknown, fn: (executor: SqlExecutor) => Promise<T>): Promise<T> {
    return inApplicationTransaction(transaction, STORE, this.schema, fn);
  }

  async claim(request: Store.WorkflowClaimRequest): Promise<Store.WorkflowClaim> {
    MYSQL_INPUT.token(request.token, request.owner);
    return this.claims.claimOn(this.executor, request, () => this.signalsOf.lastId(this.executor));
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
