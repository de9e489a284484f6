import * as pauses from './sqlite-pauses.js';
import * as processes from './sqlite-processes.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { checkDelayRange } from '../sql/delay-range.js';
import { DEFAULT_SCHEMA, validateSchemaName } from '../sql/schema-name.js';
import { initSchema } from '../sql/store-schema.js';
import { migrationLabel, type MigrationRunner } from '../sql/migration-runner.js';
import { STORE_KEY_LIMITS } from '../storage/key-limits.js';
import { StoreInput } from '../storage/store-input.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import type * as Store from '../storage/workflow-store.js';
import { SqliteChangeFeed, type ChangePollInterval } from './sqlite-change-feed.js';
import { anythingDue, claimDue } from './sqlite-claim.js';
import { SqliteConnection } from './sqlite-connection.js';
import { insertInstance, prepareCreate, type CreateResult } from './sqlite-creates.js';
import { insertFork } from './sqlite-forks.js';
import { journalRows } from './sqlite-journal.js';
import { debouncedInsert } from './sqlite-debounces.js';
import { isSqliteDatabase, openSqliteFile, type SqliteDatabaseLike } from './sqlite-driver.js';
import { sqliteMigrationRunner, sqliteMigrationSql } from './sqlite-migrations.js';
import { deleteInstance, prepareReopen, reopenInstance, requestCancel } from './sqlite-operator-changes.js';
import { purge } from './sqlite-purge.js';
import { changeMany } from './sqlite-bulk-changes.js';
import { checkBulkIds } from '../storage/workflow-store-bulk.js';
import { rewritePayloads, rewriteSignalPayload, signalPage } from './sqlite-payload-rewrite.js';
import { countDue, countUndeclaredDue, getInstance, listInstances } from './sqlite-reads.js';
import * as schedules from './sqlite-schedules.js';
import { lastSignalId, prepareSignal, readSignals, storeSignal } from './sqlite-signals.js';
import { inApplicationTransaction, type AppStatements } from './sqlite-app-transaction.js';
import { sqliteTables, type SqliteTables } from './sqlite-tables.js';
import { appendStream, readStream } from './sqlite-streams.js';
import { createCallback, expireCallback, getCallback, settleCallback } from './sqlite-callbacks.js';
import { applyWrite, prepareWrite, renewLease } from './sqlite-writes.js';

const STORE = 'SqliteWorkflowStore';

/** What the store checks before it writes anything: the same key limits as every store we ship. */
const INPUT = new StoreInput(STORE, STORE_KEY_LIMITS);

/** What `new SqliteWorkflowStore(options)` takes: `path` or `database`, not both. */
export interface SqliteWorkflowStoreOptions {
  /**
   * The database file, created if missing: the store opens it (with `better-sqlite3` when installed,
   * else `node:sqlite` on Node.js 22.5+) on first use and closes it in `close()`.
   */
  path?: string;
  /**
   * An open database instead: a `better-sqlite3` `Database` or a `node:sqlite` `DatabaseSync`. The
   * application owns it and closes it; the store sets WAL, `synchronous = FULL` and a short busy
   * timeout on it. Prefer `path` (a connection of the store's own): a transaction the application
   * leaves open on this handle holds up every call of the store until it ends.
   */
  database?: SqliteDatabaseLike;
  /**
   * The prefix of the store's tables (`<schema>_instances`...) in the file. Lowercase letters,
   * digits and underscores, not starting with a digit, at most 40 characters. Default
   * `'nest_workflows'`.
   */
  schema?: string;
  /**
   * Apply pending migrations at startup (`init()`), in one transaction under the database's write
   * lock. With `false`, startup fails with a `WorkflowSchemaError` while the tables are behind:
   * apply them with `npx nest-workflows migrate --sqlite <file>`. Default: `true`, except when
   * `NODE_ENV` is `production`.
   */
  migrate?: boolean;
  /**
   * How long a write waits for another process's write lock before it fails, in milliseconds. It
   * waits asynchronously (the event loop blocks at most a few milliseconds at a time). Default 30000.
   */
  busyTimeout?: number;
  /**
   * How often `listen()` and `listenForEnds()` look for other processes' commits (`PRAGMA
   * data_version`, no table read): `minDelay` ms after a change, doubling to `maxDelay` ms while
   * none comes. Default `{ minDelay: 5, maxDelay: 25 }`.
   */
  changePoll?: ChangePollInterval;
}

/**
 * The SQLite `WorkflowStore`: durable in one file with no server, for one machine (a laptop, a
 * desktop or edge app, a one-machine service); several processes may share the file. WAL and
 * `synchronous = FULL`: a committed write survives a crash and a power loss. Every write is a
 * `BEGIN IMMEDIATE` transaction, so the database's one write lock serializes the writes of every
 * process (claims never hand an instance to two holders, a signal never slips past a suspension);
 * a lock held elsewhere is waited for asynchronously. Payloads are kept as JSON text, exactly as written.
 */
export class SqliteWorkflowStore implements Store.WorkflowStore {
  /** The table prefix, validated. */
  readonly schema: string;
  private readonly tables: SqliteTables;
  private readonly path: string | undefined;
  private readonly given: SqliteDatabaseLike | undefined;
  private readonly busyTimeout: number;
  private readonly migrateOption: boolean | undefined;
  private readonly changePoll: ChangePollInterval | undefined;
  private opened: Promise<SqliteConnection> | null = null;
  private feed: SqliteChangeFeed | null = null;
  /** Statements prepared on the application's handles (`{ transaction }`). */
  private readonly appStatements: AppStatements = new WeakMap();

  constructor(options: SqliteWorkflowStoreOptions) {
    checkKnownKeys(options, ['path', 'database', 'schema', 'migrate', 'busyTimeout', 'changePoll'], `${STORE} options`);
    const { path, database } = options ?? {};
    if ((path === undefined) === (database === undefined)) {
      throw new TypeError(
        `${STORE}: give \`path\` (a database file) or \`database\` (an open better-sqlite3 or node:sqlite database), one of them.`,
      );
    }
    if (path !== undefined && (typeof path !== 'string' || path === '')) {
      throw new TypeError(`${STORE}: \`path\` must be the database file's path (a non-empty string).`);
    }
    if (database !== undefined && !isSqliteDatabase(database)) {
      throw new TypeError(
        `${STORE}: \`database\` must be an open better-sqlite3 Database or node:sqlite DatabaseSync.`,
      );
    }
    const busyTimeout = options.busyTimeout ?? 30_000;
    if (!Number.isFinite(busyTimeout) || busyTimeout < 0) {
      throw new TypeError(`${STORE}: \`busyTimeout\` must be a number of milliseconds, 0 or more.`);
    }
    this.path = path;
    this.given = database;
    this.busyTimeout = busyTimeout;
    this.schema = validateSchemaName(options.schema ?? DEFAULT_SCHEMA, STORE);
    this.tables = sqliteTables(this.schema);
    this.migrateOption = options.migrate;
    this.changePoll = checkDelayRange(options.changePoll, 'changePoll', STORE);
  }

  /**
   * Every migration as one SQL script for `schema` (default `'nest_workflows'`), for your own
   * migration tool: creates the history table, runs and records each migration.
   */
  static migrationSql(schema: string = DEFAULT_SCHEMA): string {
    return sqliteMigrationSql(validateSchemaName(schema, STORE));
  }

  /**
   * The database this store runs on (opened on first use from `path`): what `ctx.transaction()`
   * callbacks get as `tx`, and what `start()` / `signal()` take as `transaction` once the
   * application began one on it (`BEGIN IMMEDIATE`).
   */
  async database(): Promise<SqliteDatabaseLike> {
    return (await this.connection()).database;
  }

  /** Migrates (or, with `migrate: false`, checks the tables are current). Called once at startup. */
  async init(): Promise<void> {
    const connection = await this.connection();
    await initSchema({
      runner: this.migrationRunner(connection),
      migrate: this.migrateOption,
      store: STORE,
      schema: this.schema,
      cliFlag: '--sqlite',
    });
  }

  /** Applies the pending migrations; resolves to their names (`0001_init`...). */
  async migrate(): Promise<string[]> {
    return (await this.migrationRunner(await this.connection()).migrate()).map(migrationLabel);
  }

  private migrationRunner(connection: SqliteConnection): MigrationRunner {
    return sqliteMigrationRunner(connection, this.schema, STORE);
  }

  async create(init: Store.NewWorkflowInstance): Promise<CreateResult> {
    INPUT.newInstance(init);
    const create = prepareCreate(init);
    return (await this.connection()).write((sql) =>
      init.debounce ? debouncedInsert(sql, this.tables, init, create) : insertInstance(sql, this.tables, create),
    );
  }

  /**
   * `create()` in the application's transaction: `transaction` is its `better-sqlite3` (or
   * `node:sqlite`) database on this store's file, with a transaction open (`BEGIN IMMEDIATE`, so
   * it holds the write lock). Insert-or-ignore: it raises no error inside that transaction.
   */
  async createInTransaction(transaction: unknown, init: Store.NewWorkflowInstance): Promise<CreateResult> {
    INPUT.newInstance(init);
    const create = prepareCreate(init);
    return inApplicationTransaction(this.appStatements, transaction, 'start()', (sql) =>
      init.debounce ? debouncedInsert(sql, this.tables, init, create) : insertInstance(sql, this.tables, create),
    );
  }

  /** `client.fork()`: the create, the origin and the journal in one write transaction. */
  async fork(fork: Store.WorkflowFork): Promise<CreateResult> {
    INPUT.newInstance(fork.instance);
    INPUT.entries(fork.instance.id, fork.entries);
    const create = prepareCreate(fork.instance);
    const rows = journalRows(fork.entries);
    return (await this.connection()).write((sql) => insertFork(sql, this.tables, create, fork.from, rows));
  }

  /** `fork()` in the application's transaction, under the rules of `createInTransaction()`. */
  async forkInTransaction(transaction: unknown, fork: Store.WorkflowFork): Promise<CreateResult> {
    INPUT.newInstance(fork.instance);
    INPUT.entries(fork.instance.id, fork.entries);
    const create = prepareCreate(fork.instance);
    const rows = journalRows(fork.entries);
    return inApplicationTransaction(this.appStatements, transaction, 'fork()', (sql) =>
      insertFork(sql, this.tables, create, fork.from, rows),
    );
  }

  async createOccurrence(
    scheduleId: string,
    token: string | null,
    init: Store.NewWorkflowInstance,
    revision?: number,
  ): Promise<CreateResult | null> {
    INPUT.newInstance(init);
    const create = prepareCreate(init);
    return (await this.connection()).write((sql) =>
      schedules.occurrenceFenced(sql, this.tables, scheduleId, token, init.now, revision)
        ? insertInstance(sql, this.tables, create)
        : null,
    );
  }

  async get(id: string, options?: { journal?: boolean }): Promise<Store.WorkflowInstanceDetails | null> {
    return (await this.connection()).read((sql) => getInstance(sql, this.tables, id, options?.journal === true));
  }

  async list(query: Store.WorkflowListQuery): Promise<WorkflowInstance[]> {
    return (await this.connection()).read((sql) => listInstances(sql, this.tables, query));
  }

  async countDue(now: number, cap: number): Promise<number> {
    return (await this.connection()).read((sql) => countDue(sql, this.tables, now, cap));
  }

  async countUndeclaredDue(query: Store.WorkflowUndeclaredDueQuery): Promise<Store.WorkflowUndeclaredDue[]> {
    return (await this.connection()).read((sql) => countUndeclaredDue(sql, this.tables, query));
  }

  async requestCancel(id: string, request: Store.WorkflowCancelRequest): Promise<boolean> {
    return (await this.connection()).write((sql) => requestCancel(sql, this.tables, id, request));
  }

  async reopen(id: string, reopen: Store.WorkflowReopen): Promise<boolean> {
    INPUT.entries(id, reopen.entries);
    const prepared = prepareReopen(reopen);
    return (await this.connection()).write((sql) => reopenInstance(sql, this.tables, id, prepared));
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    if (statuses.length === 0) return false;
    return (await this.connection()).write((sql) => deleteInstance(sql, this.tables, id, statuses));
  }

  async signal(signal: Store.NewWorkflowSignal): Promise<Store.WorkflowSignalResult> {
    INPUT.signal(signal);
    const prepared = prepareSignal(signal);
    return (await this.connection()).write((sql) => storeSignal(sql, this.tables, prepared));
  }

  /** `signal()` in the application's transaction, under the rules of `createInTransaction()`. */
  async signalInTransaction(
    transaction: unknown,
    signal: Store.NewWorkflowSignal,
  ): Promise<Store.WorkflowSignalResult> {
    INPUT.signal(signal);
    const prepared = prepareSignal(signal);
    return inApplicationTransaction(this.appStatements, transaction, 'signal()', (sql) =>
      storeSignal(sql, this.tables, prepared),
    );
  }

  async signals(query: Store.WorkflowSignalQuery): Promise<Store.WorkflowSignalRecord[]> {
    return (await this.connection()).read((sql) => readSignals(sql, this.tables, query));
  }

  async purge(query: Store.WorkflowPurgeQuery): Promise<Store.WorkflowPurgeResult> {
    return (await this.connection()).write((sql) => purge(sql, this.tables, query));
  }

  async pause(id: string, request: Store.WorkflowPauseRequest): Promise<boolean> {
    return (await this.connection()).write((sql) => pauses.pauseInstance(sql, this.tables, id, request));
  }

  /** `pause()` in the application's transaction, under the rules of `createInTransaction()`. */
  async pauseInTransaction(transaction: unknown, id: string, request: Store.WorkflowPauseRequest): Promise<boolean> {
    return inApplicationTransaction(this.appStatements, transaction, 'pause()', (sql) =>
      pauses.pauseInstance(sql, this.tables, id, request),
    );
  }

  async resume(id: string, now: number): Promise<boolean> {
    return (await this.connection()).write((sql) => pauses.resumeInstance(sql, this.tables, id, now));
  }

  /** `resume()` in the application's transaction, under the rules of `createInTransaction()`. */
  async resumeInTransaction(transaction: unknown, id: string, now: number): Promise<boolean> {
    return inApplicationTransaction(this.appStatements, transaction, 'resume()', (sql) =>
      pauses.resumeInstance(sql, this.tables, id, now),
    );
  }

  /** A page of a bulk action, in one write transaction. */
  async changeMany(ids: readonly string[], change: Store.WorkflowBulkChange): Promise<string[]> {
    checkBulkIds(ids);
    if (ids.length === 0) return [];
    return (await this.connection()).write((sql) => changeMany(sql, this.tables, ids, change));
  }

  /** `changeMany()` in the application's transaction, under the rules of `createInTransaction()`. */
  async changeManyInTransaction(
    transaction: unknown,
    ids: readonly string[],
    change: Store.WorkflowBulkChange,
  ): Promise<string[]> {
    checkBulkIds(ids);
    return inApplicationTransaction(this.appStatements, transaction, 'a bulk action (cancelMany()...)', (sql) =>
      changeMany(sql, this.tables, ids, change),
    );
  }

  async pauseWorkflow(target: Store.WorkflowPauseTarget, request: Store.WorkflowPauseRequest): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return (await this.connection()).write((sql) => pauses.pauseWorkflow(sql, this.tables, target, request));
  }

  /** `pauseWorkflow()` in the application's transaction, under the rules of `createInTransaction()`. */
  async pauseWorkflowInTransaction(
    transaction: unknown,
    target: Store.WorkflowPauseTarget,
    request: Store.WorkflowPauseRequest,
  ): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return inApplicationTransaction(this.appStatements, transaction, 'pauseWorkflow()', (sql) =>
      pauses.pauseWorkflow(sql, this.tables, target, request),
    );
  }

  async resumeWorkflow(target: Store.WorkflowPauseTarget): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return (await this.connection()).write((sql) => pauses.resumeWorkflow(sql, this.tables, target));
  }

  /** `resumeWorkflow()` in the application's transaction, under the rules of `createInTransaction()`. */
  async resumeWorkflowInTransaction(transaction: unknown, target: Store.WorkflowPauseTarget): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return inApplicationTransaction(this.appStatements, transaction, 'resumeWorkflow()', (sql) =>
      pauses.resumeWorkflow(sql, this.tables, target),
    );
  }

  async pausedWorkflows(): Promise<Store.WorkflowPausedWorkflow[]> {
    return (await this.connection()).read((sql) => pauses.pausedWorkflows(sql, this.tables));
  }

  async recordProcess(record: Store.WorkflowProcessRecord, staleBefore: number): Promise<void> {
    return (await this.connection()).write((sql) => processes.recordProcess(sql, this.tables, record, staleBefore));
  }

  async removeProcess(id: string): Promise<boolean> {
    return (await this.connection()).write((sql) => processes.removeProcess(sql, this.tables, id));
  }

  async processes(seenSince: number): Promise<Store.WorkflowProcessRecord[]> {
    return (await this.connection()).read((sql) => processes.liveProcesses(sql, this.tables, seenSince));
  }

  async claim(request: Store.WorkflowClaimRequest): Promise<Store.WorkflowClaim> {
    INPUT.token(request.token, request.owner);
    const connection = await this.connection();
    // Most claims of an idle worker find nothing: they read, and never queue for the write lock.
    const due = await connection.read((sql) =>
      anythingDue(sql, this.tables, request) ? null : { instances: [], lastSignalId: lastSignalId(sql, this.tables) },
    );
    return due ?? connection.write((sql) => claimDue(sql, this.tables, request));
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<Store.WorkflowLeaseFlags | null> {
    return (await this.connection()).write((sql) => renewLease(sql, this.tables, id, token, leaseUntil));
  }

  async write(id: string, token: string, write: Store.WorkflowWrite): Promise<boolean> {
    INPUT.write(id, write);
    const prepared = prepareWrite(write);
    return (await this.connection()).write((sql) => applyWrite(sql, this.tables, id, token, prepared));
  }

  /**
   * `ctx.transaction()`: `body` runs in one `BEGIN IMMEDIATE` transaction on the store's connection,
   * whose database is `tx.handle`; `tx.write()` is `write()` in it. It holds the write lock of the
   * file until it commits, and every other call of this store waits for it: keep such steps short.
   */
  async transaction<T>(
    id: string,
    token: string,
    body: (tx: Store.WorkflowStoreTransaction) => Promise<T>,
  ): Promise<T> {
    const connection = await this.connection();
    return connection.transaction((sql) =>
      body({
        handle: connection.database,
        write: async (write) => {
          INPUT.write(id, write);
          return applyWrite(sql, this.tables, id, token, prepareWrite(write));
        },
      }),
    );
  }

  async appendStream(append: Store.WorkflowStreamAppend): Promise<Store.WorkflowStreamAppendResult | null> {
    return (await this.connection()).write((sql) => appendStream(sql, this.tables, append));
  }

  async readStream(query: Store.WorkflowStreamQuery): Promise<Store.WorkflowStreamPage> {
    return (await this.connection()).read((sql) => readStream(sql, this.tables, query));
  }

  async createCallback(callback: Store.NewWorkflowCallback): Promise<boolean> {
    return (await this.connection()).write((sql) => createCallback(sql, this.tables, callback));
  }

  async getCallback(id: string, name: string): Promise<Store.WorkflowCallbackRecord | null> {
    return (await this.connection()).read((sql) => getCallback(sql, this.tables, id, name));
  }

  async settleCallback(settle: Store.WorkflowCallbackSettle): Promise<Store.WorkflowCallbackSettleResult> {
    return (await this.connection()).write((sql) => settleCallback(sql, this.tables, settle));
  }

  async expireCallback(id: string, name: string, now: number): Promise<boolean> {
    return (await this.connection()).write((sql) => expireCallback(sql, this.tables, id, name, now));
  }

  async rewritePayloads(id: string, rewrite: Store.WorkflowPayloadRewrite): Promise<number> {
    return (await this.connection()).write((sql) => rewritePayloads(sql, this.tables, id, rewrite));
  }

  async listSignals(query: Store.WorkflowSignalPageQuery): Promise<Store.WorkflowSignalRecord[]> {
    return (await this.connection()).read((sql) => signalPage(sql, this.tables, query));
  }

  async rewriteSignalPayload(id: number, change: Store.WorkflowPayloadChange): Promise<boolean> {
    return (await this.connection()).write((sql) => rewriteSignalPayload(sql, this.tables, id, change));
  }

  async saveSchedule(save: Store.WorkflowScheduleSave): Promise<Store.WorkflowScheduleRecord | null> {
    INPUT.schedule(save);
    const params = schedules.prepareScheduleSave(save);
    return (await this.connection()).write((sql) => schedules.saveSchedule(sql, this.tables, save, params));
  }

  async getSchedule(id: string): Promise<Store.WorkflowScheduleRecord | null> {
    return (await this.connection()).read((sql) => schedules.getSchedule(sql, this.tables, id));
  }

  async listSchedules(query: Store.WorkflowScheduleQuery): Promise<Store.WorkflowScheduleRecord[]> {
    return (await this.connection()).read((sql) => schedules.listSchedules(sql, this.tables, query));
  }

  async deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return (await this.connection()).write((sql) => schedules.deleteSchedule(sql, this.tables, id, revision));
  }

  async claimSchedules(request: Store.WorkflowScheduleClaimRequest): Promise<Store.WorkflowScheduleRecord[]> {
    INPUT.token(request.token, request.owner);
    if (request.workflows.length === 0) return [];
    return (await this.connection()).write((sql) => schedules.claimSchedules(sql, this.tables, request));
  }

  async writeSchedule(id: string, token: string, write: Store.WorkflowScheduleWrite): Promise<boolean> {
    const state = schedules.prepareScheduleWrite(write);
    return (await this.connection()).write((sql) => schedules.writeSchedule(sql, this.tables, id, token, write, state));
  }

  /**
   * Calls `listener` when another process committed to the file (it may have made work due), and
   * names each cancel or terminate stored since (`'cancel'`), found by a short poll of `PRAGMA
   * data_version` (see `SqliteChangeFeed`): SQLite has no LISTEN/NOTIFY.
   */
  async listen(
    listener: (id?: string, kind?: Store.WorkflowWakeUpKind) => void,
    options?: Store.WorkflowListenOptions,
  ): Promise<() => Promise<void>> {
    return (await this.changeFeed()).listen(listener, options);
  }

  /** Calls `listener` with `id` once the instance `id` ended in any process (the same poll). Without `id`, never. */
  async listenForEnds(listener: (id: string | null) => void, id?: string): Promise<() => Promise<void>> {
    return (await this.changeFeed()).listenForEnds(listener, id);
  }

  /**
   * Stops the change poll and closes the database file the store opened (an application's
   * `database` stays open: it owns it). The store can be used again: the next call opens the file anew.
   */
  async close(): Promise<void> {
    this.feed?.close();
    this.feed = null;
    const opened = this.opened;
    this.opened = null;
    if (!opened || this.given) return;
    (await opened.catch(() => null))?.close();
  }

  private async changeFeed(): Promise<SqliteChangeFeed> {
    const connection = await this.connection();
    this.feed ??= new SqliteChangeFeed(connection, this.tables, this.changePoll);
    return this.feed;
  }

  private connection(): Promise<SqliteConnection> {
    this.opened ??= this.open();
    return this.opened;
  }

  private async open(): Promise<SqliteConnection> {
    const database = this.given ?? (await openSqliteFile(this.path!, STORE));
    const connection = new SqliteConnection(database, this.busyTimeout, () => this.feed?.committed());
    try {
      await connection.configure();
    } catch (error) {
      if (!this.given) connection.close();
      this.opened = null;
      throw error;
    }
    return connection;
  }
}
