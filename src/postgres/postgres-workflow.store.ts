import { PostgresPauses } from './postgres-pauses.js';
import { PostgresBulkChanges } from './postgres-bulk-changes.js';
import { postgresProcesses } from './postgres-processes.js';
import type { SqlProcesses } from '../sql/process-records.js';
import { checkAnswers, explainConnectionError } from './connection-error.js';
import type { PostgresWorkflowStoreOptions } from './postgres-store-options.js';
import { durationOr } from '../time/duration.js';
import { checkTransactions, inApplicationTransaction } from './postgres-app-transaction.js';
import { POSTGRES_INPUT } from './key-limits.js';
import { claimInstances } from './postgres-claim.js';
import { postgresClaimStatements, type PostgresClaimStatements } from './postgres-claim-statements.js';
import { PostgresCancelRequests } from './postgres-cancel-requests.js';
import { PostgresCreates } from './postgres-creates.js';
import { PostgresForks } from './postgres-forks.js';
import { PostgresDeletes } from './postgres-deletes.js';
import { PostgresEndNotices } from './postgres-end-notices.js';
import { PostgresWrites } from './postgres-writes.js';
import { PostgresLeaseRenewal } from './postgres-lease-renewal.js';
import { PostgresListener } from './postgres-listener.js';
import { PostgresCallbacks } from './postgres-callbacks.js';
import { PostgresStreams, STREAMS_CHANNEL_SUFFIX } from './postgres-streams.js';
import { POSTGRES_MIGRATIONS, postgresMigrationDialect, postgresMigrationSql } from './postgres-migrations.js';
import { PostgresPayloadRewrite } from './postgres-payload-rewrite.js';
import { PostgresReads } from './postgres-reads.js';
import { PostgresReopen } from './postgres-reopen.js';
import { PostgresSchedules } from './postgres-schedules.js';
import { PostgresSignals } from './postgres-signals.js';
import { PostgresStatementTimeout } from './postgres-statement-timeout.js';
import { endsChannel, wakeUpChannel } from './postgres-sql-fragments.js';
import { MigrationRunner } from '../sql/migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { SqlWorkflowStoreBase } from '../sql/sql-workflow-store.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { POSTGRES_DIALECT } from './postgres-dialect.js';
import { untakenSignals } from '../sql/untaken-signals.js';
import { initSchema } from '../sql/store-schema.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowClaim,
  WorkflowClaimRequest,
  WorkflowSignalResult,
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
  WorkflowStore,
  WorkflowWakeUpKind,
  WorkflowWrite,
} from '../storage/workflow-store.js';
import type {
  WorkflowStoreTransaction,
  WorkflowStoreTransactionOptions,
} from '../storage/workflow-store-transactions.js';

const STORE = 'PostgresWorkflowStore';
/** A journal entry's `signalId` (`untakenSignals()`): the column is `json`, kept as the text written. */
const ENTRY_SIGNAL_ID = {
  text: (entry: string) => `${entry}::text`,
  value: (entry: string) => `(${entry}->>'signalId')::bigint`,
};
/** How long the ends' channel stays LISTENed to after the last `listenForEnds()` listener left (ms). */
const ENDS_LINGER = 1_000;

/**
 * The PostgreSQL `WorkflowStore` (PostgreSQL 12 or later). Claims lease with `FOR UPDATE SKIP
 * LOCKED`; signals and suspensions are ordered per topic (signal name and key) by advisory locks
 * taken inside single statements (migration 0003); payloads are kept
 * as `json` text, exactly as written; LISTEN/NOTIFY wakes idle workers in other processes when work
 * becomes due. Keys longer than `POSTGRES_KEY_LIMITS` are refused with a `RangeError` before
 * anything is written.
 */
export class PostgresWorkflowStore extends SqlWorkflowStoreBase implements WorkflowStore {
  protected readonly input = POSTGRES_INPUT;
  private readonly transactions: Pick<SqlExecutor, 'transaction'> | null;
  /** The wake-ups' LISTEN/NOTIFY channel: one per schema. */
  private readonly channel: string;
  private readonly claimSql: PostgresClaimStatements;
  protected readonly scheduleStore: PostgresSchedules;
  protected readonly signalsOf: PostgresSignals;
  private readonly startupTimeout: number;
  private wakeUps: PostgresListener | null = null;
  private ends: PostgresListener | null = null;
  protected readonly reads: PostgresReads;
  protected readonly creates: PostgresCreates;
  protected readonly cancels: PostgresCancelRequests;
  private readonly endNotices: PostgresEndNotices;
  protected readonly renewals: PostgresLeaseRenewal;
  private readonly writes: PostgresWrites;
  protected readonly reopens: PostgresReopen;
  protected readonly deletes: PostgresDeletes;
  protected readonly pauses: PostgresPauses;
  protected readonly processRecords: SqlProcesses;
  protected readonly forks: PostgresForks;
  protected readonly bulkChanges: PostgresBulkChanges;
  private readonly statementTimeout = new PostgresStatementTimeout();
  protected readonly payloadRewrites: PostgresPayloadRewrite;
  protected readonly callbacks: PostgresCallbacks;
  protected readonly streams: PostgresStreams;
  private streamNotices: PostgresListener | null = null;

  constructor(options: PostgresWorkflowStoreOptions) {
    super(
      options,
      STORE,
      "fromPg(pool) from '@nestjs/workflows/postgres'",
      'It looks like a pg Pool: wrap it, `executor: fromPg(pool)`.',
      ['startupTimeout', 'transactions'],
    );
    if (options.transactions !== undefined && typeof options.transactions?.transaction !== 'function') {
      throw new TypeError(
        `${STORE}: \`transactions\` must be what typeormTransactions(), prismaTransactions(), drizzleTransactions(), kyselyTransactions() or mikroOrmTransactions() return.`,
      );
    }
    this.transactions = options.transactions ?? null;
    this.channel = wakeUpChannel(this.schema);
    this.claimSql = postgresClaimStatements(this.schema);
    this.scheduleStore = new PostgresSchedules(this.executor, this.schema, this.channel);
    this.signalsOf = new PostgresSignals(this.schema, this.channel, STORE);
    this.payloadRewrites = new PostgresPayloadRewrite(this.executor, this.schema);
    this.startupTimeout = durationOr(options.startupTimeout, 5_000, `${STORE} option "startupTimeout"`);
    this.reads = new PostgresReads(this.executor, this.schema);
    this.creates = new PostgresCreates(this.executor, this.schema, this.channel, this.reads);
    this.cancels = new PostgresCancelRequests(this.schema, this.channel);
    this.endNotices = new PostgresEndNotices(this.schema, this.channel);
    this.renewals = new PostgresLeaseRenewal(this.schema);
    this.writes = new PostgresWrites(this.executor, this.schema, this.channel);
    this.reopens = new PostgresReopen(this.schema, this.channel);
    this.deletes = new PostgresDeletes(this.schema);
    this.callbacks = new PostgresCallbacks(this.executor, this.schema);
    this.streams = new PostgresStreams(this.schema, this.channel + STREAMS_CHANNEL_SUFFIX);
    this.pauses = new PostgresPauses(this.schema, this.channel);
    this.processRecords = postgresProcesses(this.schema);
    this.forks = new PostgresForks(this.schema);
    this.bulkChanges = new PostgresBulkChanges(this.schema, this.channel);
  }

  /**
   * Every migration as one SQL script for `schema` (default `'nest_workflows'`), for your own
   * migration tool: creates the schema and the history table, applies and records each migration.
   */
  static migrationSql(schema: string = DEFAULT_SCHEMA): string {
    return postgresMigrationSql(validateSchemaName(schema, STORE));
  }

  /**
   * Checks that the server answers (within `startupTimeout`), then migrates (or, with `migrate:
   * false`, checks the schema is current). Called once at startup.
   */
  async init(): Promise<void> {
    await checkAnswers(this.executor, this.startupTimeout, this.schema);
    try {
      await initSchema({
        runner: this.migrationRunner(),
        migrate: this.migrateOption,
        store: STORE,
        schema: this.schema,
        cliFlag: '--postgres',
      });
    } catch (error) {
      throw explainConnectionError(error, this.schema, this.executor.target);
    }
    if (this.transactions) await checkTransactions(this.transactions, STORE, this.schema);
  }

  protected migrationRunner(): MigrationRunner {
    return new MigrationRunner(this.executor, postgresMigrationDialect(this.schema), POSTGRES_MIGRATIONS, {
      store: STORE,
      schema: this.schema,
    });
  }

  /**
   * `create()` in the application's transaction: `transaction` is the `pg` client it ran `BEGIN`
   * on, an ORM's transaction handle (TypeORM, Prisma, Drizzle, Kysely, MikroORM) or a `SqlExecutor`
   * for it. Its statements run in a savepoint, so a failure never aborts that transaction.
   */
  async createInTransaction(
    transaction: unknown,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    POSTGRES_INPUT.newInstance(instance);
    return this.inApplicationTransaction(transaction, (executor) =>
      this.creates.createInTransaction(executor, instance),
    );
  }

  /**
   * `signal()` in the application's transaction (a handle as for `createInTransaction()`), READ COMMITTED (other levels are refused: the wake-up would
   * miss waits committed after the transaction's snapshot). The lock of the signal's topic (its
   * name and key) is held until that transaction ends, so keep it short: until then, suspensions
   * waiting for that topic, and other signals of it, wait; nothing else does.
   */
  async signalInTransaction(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    POSTGRES_INPUT.signal(signal);
    return this.inApplicationTransaction(transaction, (executor) => this.signalsOf.sendInTransaction(executor, signal));
  }

  untakenSignals(query: WorkflowUntakenSignalQuery): Promise<WorkflowUntakenSignal[]> {
    return untakenSignals(this.executor, POSTGRES_DIALECT, this.schema, ENTRY_SIGNAL_ID, query);
  }

  protected inApplicationTransaction<T>(transaction: unknown, fn: (executor: SqlExecutor) => Promise<T>): Promise<T> {
    return inApplicationTransaction(transaction, STORE, this.schema, fn);
  }

  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    POSTGRES_INPUT.token(request.token, request.owner);
    return claimInstances(this.executor, this.claimSql, request);
  }

  /**
   * One statement updates the row (only while `token` holds its lease), upserts the journal, on
   * release computes the wake-up, and sends the write's signal: it needs no explicit transaction
   * (see postgres-writes.ts).
   */
  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    return this.writes.write(id, token, write);
  }

  /**
   * `ctx.transaction()`: `body` runs in a transaction of the store's executor, and `tx.write()` is
   * `write()` on that transaction. The write locks the instance row until the commit, so no claim
   * takes the instance between the two. With a timeout, each statement is also bounded by the
   * server (`statement_timeout`, a second past the step's timeout): the engine fails the attempt
   * when the timeout passes, and the rollback then waits at most that long for a statement running.
   */
  transaction<T>(
    id: string,
    token: string,
    body: (tx: WorkflowStoreTransaction) => Promise<T>,
    options: WorkflowStoreTransactionOptions,
  ): Promise<T> {
    return (this.transactions ?? this.executor).transaction((tx) =>
      this.statementTimeout.around(tx, options.timeout, () =>
        body({ handle: tx.handle ?? tx, write: (write) => this.writes.writeIn(tx, id, token, write) }),
      ),
    );
  }

  /**
   * Calls `listener` when another process (or this one) made work due: a start or a hand-back due
   * now (with its id, which `claim()` then takes by key), a signal that woke an instance, a cancel
   * or terminate (with its id and `'cancel'`, once committed), a retry. LISTENs on the schema's
   * wake-up channel, on the executor's LISTEN connection (one per `fromPg()` executor, shared with
   * `listenForEnds()`), reconnected with backoff when it drops (then `listener` is called once, for
   * what it missed).
   */
  async listen(listener: (id?: string, kind?: WorkflowWakeUpKind) => void): Promise<() => Promise<void>> {
    return (this.wakeUps ??= new PostgresListener(this.executor, this.channel)).addWakeUps(listener);
  }

  /**
   * Calls `listener` with the id of each instance that ends, in any process, once its end was asked
   * for (`requestEndNotice()`), and with `null` when it may have missed some. LISTENs on the
   * schema's ends' channel only while some listener is there, and a second past the last one (so a
   * process without a waiting `handle.result()` hears no ends, and one that awaits results one
   * after another does not LISTEN and UNLISTEN for each).
   */
  async listenForEnds(listener: (id: string | null) => void): Promise<() => Promise<void>> {
    return (this.ends ??= new PostgresListener(
      this.executor,
      endsChannel(this.schema),
      undefined,
      ENDS_LINGER,
    )).addEnds(listener);
  }

  /**
   * Asks that the end of `id` be notified on the ends' channel (an end notifies only when asked: see
   * migration 0005): one autocommit UPDATE of the instance row, ordered with the end by the row's
   * lock (see `notifyEnded()`). `false`: the instance is finished or unknown. Due at `now` and
   * free, the instance is named on the wake-up channel again (see the statement).
   */
  async requestEndNotice(id: string, now: number): Promise<boolean> {
    return this.endNotices.request(this.executor, id, now);
  }

  /**
   * Calls `listener` with the instance id and stream name of each append, in any process, once
   * committed (NOTIFY on the schema's streams channel, LISTENed to while some listener is there), and
   * with no arguments after a reconnection or for a name too long to send.
   */
  async listenForStreams(listener: (id?: string, stream?: string) => void): Promise<() => Promise<void>> {
    this.streamNotices ??= new PostgresListener(
      this.executor,
      this.channel + STREAMS_CHANNEL_SUFFIX,
      undefined,
      ENDS_LINGER,
    );
    return this.streamNotices.add((notice) => {
      const at = notice ? notice.indexOf('\n') : -1;
      if (notice === null || at < 0) listener();
      else listener(notice.slice(0, at), notice.slice(at + 1));
    });
  }

  /** Releases the LISTEN connection (its wake-up, ends' and streams' subscriptions). The application's pool stays open: it owns it. */
  async close(): Promise<void> {
    const listeners = [this.wakeUps, this.ends, this.streamNotices];
    this.wakeUps = null;
    this.ends = null;
    this.streamNotices = null;
    await Promise.all(listeners.map((listener) => listener?.close()));
  }
}
