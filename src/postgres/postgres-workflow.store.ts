import { checkAnswers, explainConnectionError } from './connection-error.js';
import type { PostgresWorkflowStoreOptions } from './postgres-store-options.js';
import { durationOr } from '../time/duration.js';
import { explainOtherDatabase, inApplicationTransaction } from './postgres-app-transaction.js';
import { POSTGRES_INPUT } from './key-limits.js';
import { POSTGRES_DIALECT } from './postgres-dialect.js';
import { claimInstances } from './postgres-claim.js';
import { postgresClaimStatements, type PostgresClaimStatements } from './postgres-claim-statements.js';
import { PostgresCreateBatch } from './postgres-create-batch.js';
import { PostgresInstanceWrites } from './postgres-instance-writes.js';
import { PostgresListener } from './postgres-listener.js';
import { POSTGRES_MIGRATIONS, postgresMigrationDialect, postgresMigrationSql } from './postgres-migrations.js';
import { PostgresPayloadRewrite } from './postgres-payload-rewrite.js';
import { PostgresSchedules } from './postgres-schedules.js';
import { PostgresSignals } from './postgres-signals.js';
import { postgresStatements, type PostgresStatements } from './postgres-statements.js';
import { newInstanceParams, newInstanceRowParams } from '../sql/instance-params.js';
import { listInstancesStatement } from '../sql/list-queries.js';
import { MigrationRunner } from '../sql/migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { finishedOnly, SqlWorkflowStoreBase } from '../sql/sql-workflow-store.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { distinctEntries } from '../sql/distinct-entries.js';
import { untakenSignals } from '../sql/untaken-signals.js';
import { initSchema } from '../sql/store-schema.js';
import { fromJson, toBoolean, toInstance, toJson, toSignal, toWaits } from '../sql/workflow-rows.js';
import { journalJson } from '../storage/journal-entry-json.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowInstance, WorkflowJournalEntry, WorkflowStatus } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowCancelRequest,
  WorkflowClaim,
  WorkflowClaimRequest,
  WorkflowInstanceDetails,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowReopen,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
  WorkflowStore,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
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
/** How much longer than a `ctx.transaction()` step's timeout its statements may run (ms). */
const STATEMENT_TIMEOUT_MARGIN = 1_000;
/** The largest `statement_timeout` PostgreSQL takes (ms, about 24.8 days): a longer step's timeout is bounded by it. */
const MAX_STATEMENT_TIMEOUT = 2_147_483_647;
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
  private readonly transactions: Pick<SqlExecutor, 'transaction'> | null;
  private readonly sql: PostgresStatements;
  private readonly claimSql: PostgresClaimStatements;
  protected readonly scheduleStore: PostgresSchedules;
  private readonly signalLock: PostgresSignals;
  private readonly startupTimeout: number;
  private wakeUps: PostgresListener | null = null;
  private ends: PostgresListener | null = null;
  private readonly creates: PostgresCreateBatch;
  private readonly writes: PostgresInstanceWrites;
  protected readonly payloadRewrites: PostgresPayloadRewrite;

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
    this.sql = postgresStatements(this.schema);
    this.claimSql = postgresClaimStatements(this.schema);
    this.scheduleStore = new PostgresSchedules(this.executor, this.schema, this.sql.channel);
    this.signalLock = new PostgresSignals(this.sql, STORE);
    this.payloadRewrites = new PostgresPayloadRewrite(this.executor, this.schema);
    this.startupTimeout = durationOr(options.startupTimeout, 5_000, `${STORE} option "startupTimeout"`);
    this.writes = new PostgresInstanceWrites(this.executor, this.schema, this.sql.channel);
    this.creates = new PostgresCreateBatch(
      this.executor,
      this.schema,
      this.sql.channel,
      async (id) => {
        const { rows } = await this.executor.query(this.sql.getInstance, [id]);
        return rows[0] ? toInstance(rows[0]) : null;
      },
      (init, row) => this.createWith(this.executor, init, newInstanceRowParams(row)),
    );
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
    if (this.transactions) await this.checkTransactions(this.transactions);
  }

  /** Startup: the `transactions` option's transactions reach the store's schema (the same database). */
  private async checkTransactions(transactions: Pick<SqlExecutor, 'transaction'>): Promise<void> {
    let found: boolean;
    try {
      found = await transactions.transaction(async (tx) =>
        toBoolean((await tx.query(this.sql.schemaExists, [`${this.schema}.instances`])).rows[0]?.found),
      );
    } catch (error) {
      throw explainOtherDatabase(error, STORE, this.schema, 'ORM (`transactions` option)') ?? error;
    }
    if (!found) {
      throw new TypeError(
        `${STORE}: the \`transactions\` option's ORM reaches a database without the store's schema "${this.schema}". ` +
          "Build it over the store's database (the one its executor connects to), so ctx.transaction() writes the step's result there.",
      );
    }
  }

  protected migrationRunner(): MigrationRunner {
    return new MigrationRunner(this.executor, postgresMigrationDialect(this.schema), POSTGRES_MIGRATIONS, {
      store: STORE,
      schema: this.schema,
    });
  }

  async create(instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    POSTGRES_INPUT.newInstance(instance);
    return this.creates.create(instance);
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
    return inApplicationTransaction(transaction, STORE, this.schema, (executor) => this.createWith(executor, instance));
  }

  private async createWith(
    executor: SqlExecutor,
    init: NewWorkflowInstance,
    params = newInstanceParams(init),
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    POSTGRES_INPUT.newInstance(init);
    const { rows } = await executor.query(this.sql.create, [...params, this.sql.channel]);
    if (rows[0]) return { instance: toInstance(rows[0]), created: toBoolean(rows[0].created) };
    // A concurrent create of the same id committed after this statement's snapshot: read it now.
    const again = await executor.query(this.sql.getInstance, [init.id]);
    if (!again.rows[0]) throw new Error(`${STORE}: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: toInstance(again.rows[0]), created: false };
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const { rows } = await this.executor.query(
      options?.journal ? this.sql.getInstanceWithJournal : this.sql.getInstance,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const details: WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
    if (options?.journal) details.journal = (fromJson(row.journal) as WorkflowJournalEntry[] | null) ?? [];
    return details;
  }

  async list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    const { sql, params } = listInstancesStatement(POSTGRES_DIALECT, this.sql.listPrefix, query);
    const { rows } = await this.executor.query(sql, params);
    return rows.map(toInstance);
  }

  async countDue(now: number, cap: number): Promise<number> {
    const { rows } = await this.executor.query(this.sql.countDue, [now, cap]);
    return Number(rows[0]?.due ?? 0);
  }

  async countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]> {
    const names = query.workflows.map(({ name }) => name);
    const versions = query.workflows.map(({ version }) => version);
    const { rows } = await this.executor.query(this.sql.countUndeclaredDue, [
      query.dueBefore,
      names,
      versions,
      query.cap,
    ]);
    return rows.map((row) => ({
      workflow: String(row.workflow),
      version: Number(row.version),
      count: Number(row.count),
    }));
  }

  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const sql = request.terminate ? this.sql.requestTerminate : this.sql.requestCancel;
    const { rowCount } = await this.executor.query(sql, [id, request.reason, request.now, this.sql.channel]);
    return rowCount > 0;
  }

  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    POSTGRES_INPUT.entries(id, reopen.entries);
    const children = reopen.awaitedChildren ?? [];
    if (children.length === 0) return this.reopenWith(this.executor, id, reopen);
    // The row locked first, then the children read in a later snapshot: a purge() or delete() that
    // committed meanwhile is seen, and the reopen refused with nothing changed.
    return this.executor.transaction(async (tx) => {
      const { rows } = await tx.query(this.sql.lockReopen, [id, reopen.expect.status, reopen.expect.runs, reopen.now]);
      if (rows.length === 0) return false;
      const topics = children.map((child) => signalTopic(CHILD_ENDED_SIGNAL, child));
      if ((await tx.query(this.sql.unreachableChild, [[...children], topics])).rows.length > 0) return false;
      return this.reopenWith(tx, id, reopen);
    });
  }

  private async reopenWith(executor: SqlExecutor, id: string, reopen: WorkflowReopen): Promise<boolean> {
    const entries = distinctEntries(reopen.entries);
    const { rows } = await executor.query(this.sql.reopen, [
      id,
      reopen.expect.status,
      reopen.expect.runs,
      reopen.status,
      toJson(reopen.error),
      reopen.deadline !== undefined,
      reopen.deadline ?? null,
      reopen.now,
      journalJson(entries),
      entries.length,
      this.sql.channel,
      reopen.retractSignal?.name ?? null,
      reopen.retractSignal?.dedupeId ?? null,
    ]);
    return rows.length > 0;
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    if (statuses.length === 0) return false;
    const { rowCount } = await this.executor.query(this.sql.deleteInstance, [id, [...statuses]]);
    return rowCount > 0;
  }

  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    POSTGRES_INPUT.signal(signal);
    return this.signalLock.send(this.executor, signal);
  }

  /**
   * `signal()` in the application's transaction (a handle as for `createInTransaction()`), READ COMMITTED (other levels are refused: the wake-up would
   * miss waits committed after the transaction's snapshot). The lock of the signal's topic (its
   * name and key) is held until that transaction ends, so keep it short: until then, suspensions
   * waiting for that topic, and other signals of it, wait; nothing else does.
   */
  async signalInTransaction(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    POSTGRES_INPUT.signal(signal);
    return inApplicationTransaction(transaction, STORE, this.schema, (executor) =>
      this.signalLock.sendInTransaction(executor, signal),
    );
  }

  untakenSignals(query: WorkflowUntakenSignalQuery): Promise<WorkflowUntakenSignal[]> {
    return untakenSignals(this.executor, POSTGRES_DIALECT, this.schema, ENTRY_SIGNAL_ID, query);
  }

  async signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    const { rows } = await this.executor.query(this.sql.signals, [
      signalTopic(query.name, query.key),
      query.afterId,
      query.upToId,
    ]);
    return rows.map(toSignal);
  }

  async purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    // Unfinished instances are never purged, whatever `statuses` says.
    const statuses = finishedOnly(query.statuses);
    const instances =
      statuses.length === 0
        ? 0
        : (await this.executor.query(this.sql.purgeInstances, [statuses, query.before, query.limit])).rowCount;
    const signals = (await this.executor.query(this.sql.purgeSignals, [query.before, query.limit])).rowCount;
    const rateLimits = (await this.executor.query(this.sql.purgeRateWindows, [query.before, query.limit])).rowCount;
    return { instances, signals, rateLimits };
  }

  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    POSTGRES_INPUT.token(request.token, request.owner);
    return claimInstances(this.executor, this.claimSql, request);
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    const { rows } = await this.executor.query(this.sql.renew, [id, token, leaseUntil]);
    const row = rows[0];
    return row
      ? { cancelRequested: toBoolean(row.cancel_requested), terminateRequested: toBoolean(row.terminate_requested) }
      : null;
  }

  /**
   * One statement updates the row (only while `token` holds its lease), upserts the journal, on
   * release computes the wake-up, and sends the write's signal: it needs no explicit transaction
   * (see postgres-instance-writes.ts).
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
    return (this.transactions ?? this.executor).transaction(async (tx) => {
      if (options.timeout !== null)
        await tx.query(
          `SET LOCAL statement_timeout = ${Math.min(Math.ceil(options.timeout) + STATEMENT_TIMEOUT_MARGIN, MAX_STATEMENT_TIMEOUT)}`,
        );
      return body({ handle: tx.handle ?? tx, write: (write) => this.writes.writeIn(tx, id, token, write) });
    });
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
    return (this.wakeUps ??= new PostgresListener(this.executor, this.sql.channel)).addWakeUps(listener);
  }

  /**
   * Calls `listener` with the id of each instance that ends, in any process, once its end was asked
   * for (`requestEndNotice()`), and with `null` when it may have missed some. LISTENs on the
   * schema's ends' channel only while some listener is there, and a second past the last one (so a
   * process without a waiting `handle.result()` hears no ends, and one that awaits results one
   * after another does not LISTEN and UNLISTEN for each).
   */
  async listenForEnds(listener: (id: string | null) => void): Promise<() => Promise<void>> {
    return (this.ends ??= new PostgresListener(this.executor, this.sql.endsChannel, undefined, ENDS_LINGER)).addEnds(
      listener,
    );
  }

  /**
   * Asks that the end of `id` be notified on the ends' channel (an end notifies only when asked: see
   * migration 0005): one autocommit UPDATE of the instance row, ordered with the end by the row's
   * lock (see `notifyEnded()`). `false`: the instance is finished or unknown. Due at `now` and
   * free, the instance is named on the wake-up channel again (see the statement).
   */
  async requestEndNotice(id: string, now: number): Promise<boolean> {
    return (await this.executor.query(this.sql.requestEndNotice, [id, now, this.sql.channel])).rows.length > 0;
  }

  /** Releases the LISTEN connection (its wake-up and ends' subscriptions). The application's pool stays open: it owns it. */
  async close(): Promise<void> {
    const listeners = [this.wakeUps, this.ends];
    this.wakeUps = null;
    this.ends = null;
    await Promise.all(listeners.map((listener) => listener?.close()));
  }
}
