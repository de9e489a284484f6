import { migrationLabel, type MigrationRunner } from './migration-runner.js';
import { DEFAULT_SCHEMA, validateSchemaName } from './schema-name.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { requireExecutor, type SqlExecutor } from './sql-executor.js';
import { deleteInstance, purgeStore, type DeleteStatements } from './instance-deletes.js';
import { reopenInstance, type ReopenStatements } from './reopen.js';
import { appendStream, readStream, type StreamStatements } from './stream-appends.js';
import type { SqlCallbacks } from './callback-rows.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';
import type {
  WorkflowStreamAppend,
  WorkflowStreamAppendResult,
  WorkflowStreamPage,
  WorkflowStreamQuery,
} from '../storage/workflow-store-streams.js';
import type { CreateResult } from './create-batch.js';
import type { SqlPauses } from './sql-pauses.js';
import type { SqlBulkChanges } from './bulk-changes.js';
import { checkBulkIds, type WorkflowBulkChange } from '../storage/workflow-store-bulk.js';
import type { SqlProcesses } from './process-records.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
import type {
  WorkflowPausedWorkflow,
  WorkflowPauseRequest,
  WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';
import { forkWith, type ForkStatements } from './instance-fork.js';
import type { StoreInput } from '../storage/store-input.js';
import type {
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
} from '../storage/payload-rewrite.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowFork,
  WorkflowCancelRequest,
  WorkflowInstanceDetails,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowReopen,
  WorkflowSignalQuery,
  WorkflowSignalResult,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowSignalRecord,
} from '../storage/workflow-store.js';

/** What a SQL store's constructor takes (each store adds its own). */
export interface SqlWorkflowStoreOptions {
  /**
   * How the store reaches its database: `fromPg(pool)` or `fromMysql2(pool)` over your pool. The
   * application owns the pool and ends it; the store only checks out connections (its
   * transactions; on PostgreSQL one held LISTEN connection while something listens).
   */
  executor: SqlExecutor;
  /**
   * Where the store's tables live: the PostgreSQL schema (created when the store migrates), or the
   * prefix of the MySQL tables (`<schema>_instances`...) in the connection's database. Lowercase
   * letters, digits and underscores, not starting with a digit, at most 40 characters. Keep it for
   * the store alone. Default `'nest_workflows'`.
   */
  schema?: string;
  /**
   * Apply pending migrations at startup (`init()`), under a lock so processes starting together
   * migrate once. With `false`, startup fails with a `WorkflowSchemaError` while the tables are
   * behind this version of the package: apply them with `npx nest-workflows migrate`, or with your
   * own tool from the store's static `migrationSql()`. Default: `true`, except when `NODE_ENV` is
   * `production`.
   */
  migrate?: boolean;
}

/** A SQL store's schedule half: `WorkflowStore`'s schedule methods, each one statement or transaction. */
export interface SqlScheduleStore {
  save(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null>;
  get(id: string): Promise<WorkflowScheduleRecord | null>;
  list(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]>;
  delete(id: string, revision?: number): Promise<boolean>;
  claim(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]>;
  write(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean>;
  createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null>;
}

/** A SQL store's re-encryption half: `WorkflowStore`'s payload-rewrite methods. */
export interface SqlPayloadRewrites {
  rewrite(id: string, rewrite: WorkflowPayloadRewrite): Promise<number>;
  page(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]>;
  rewriteSignal(id: number, change: WorkflowPayloadChange): Promise<boolean>;
}

/** A SQL store's creates: batched with those made together, or one alone in the application's transaction. */
export interface SqlCreates {
  create(init: NewWorkflowInstance): Promise<CreateResult>;
  /** One create on `executor`, the application's transaction (inside the store's savepoint). */
  createInTransaction(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult>;
}

/** A SQL store's reads of instances. */
export interface SqlInstanceReads {
  get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null>;
  list(query: WorkflowListQuery): Promise<WorkflowInstance[]>;
  countDue(now: number, cap: number): Promise<number>;
  countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]>;
}

/** A SQL store's signals. */
export interface SqlSignals {
  /** `signal()`, in a transaction of the store's own on `executor`. */
  send(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult>;
  /** `signalInTransaction()`'s statements on `executor`, the application's transaction. */
  sendInTransaction(executor: SqlExecutor, signal: NewWorkflowSignal): Promise<WorkflowSignalResult>;
  /** `signals()`. */
  read(executor: SqlExecutor, query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]>;
}

/** A SQL store's `requestCancel()`. */
export interface SqlCancelRequests {
  requestCancel(executor: SqlExecutor, id: string, request: WorkflowCancelRequest): Promise<boolean>;
}

/** A SQL store's `renew()`. */
export interface SqlLeaseRenewal {
  renew(executor: SqlExecutor, id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null>;
}

/**
 * What the SQL stores do alike, whatever their dialect: `migrate()` through their migration
 * runner, the schedule methods through their schedule half, and the operations each dialect
 * writes in a part of its own (reads, creates, signals, cancel requests, renewals, reopens,
 * deletes) through those parts (see each store for how).
 */
export abstract class SqlWorkflowStoreBase {
  /** The schema's name, validated. */
  readonly schema: string;
  protected readonly executor: SqlExecutor;
  /** The `migrate` option as given: `undefined` follows `NODE_ENV` (see `initSchema()`). */
  protected readonly migrateOption: boolean | undefined;

  /**
   * Checks the common options (and that no unknown key is given, `extraKeys` being the store's
   * own): `factory` names what wraps the driver's pool (for the message when `executor` is not an
   * executor), `hint` says how when it looks like a raw pool.
   */
  protected constructor(
    options: SqlWorkflowStoreOptions,
    store: string,
    factory: string,
    hint: string,
    extraKeys: readonly string[] = [],
  ) {
    checkKnownKeys(options, ['executor', 'schema', 'migrate', ...extraKeys], `${store} options`);
    this.executor = requireExecutor(options?.executor, store, factory, hint);
    this.schema = validateSchemaName(options.schema ?? DEFAULT_SCHEMA, store);
    this.migrateOption = options.migrate;
  }

  /** What the store checks before it writes anything (its key limits). */
  protected abstract readonly input: StoreInput;
  protected abstract readonly creates: SqlCreates;
  protected abstract readonly reads: SqlInstanceReads;
  protected abstract readonly signalsOf: SqlSignals;
  protected abstract readonly cancels: SqlCancelRequests;
  protected abstract readonly renewals: SqlLeaseRenewal;
  protected abstract readonly reopens: ReopenStatements<unknown>;
  protected abstract readonly deletes: DeleteStatements;
  protected abstract readonly pauses: SqlPauses;
  protected abstract readonly processRecords: SqlProcesses;
  protected abstract readonly forks: ForkStatements;
  protected abstract readonly bulkChanges: SqlBulkChanges;

  /** The store's re-encryption half. */
  protected abstract readonly payloadRewrites: SqlPayloadRewrites;

  /** The store's schedule half. */
  protected abstract readonly scheduleStore: SqlScheduleStore;

  /** The streams' statements (`appendStream()`, `readStream()`). */
  protected abstract readonly streams: StreamStatements;

  /** The callbacks' statements (`createCallback()`...). */
  protected abstract readonly callbacks: SqlCallbacks;

  /** A runner over the store's migrations and migration dialect. */
  protected abstract migrationRunner(): MigrationRunner;

  /**
   * `fn` on the application's transaction handle (`start()` / `signal()` with `{ transaction }`), in
   * a savepoint of it, one call at a time per handle.
   */
  protected abstract inApplicationTransaction<T>(
    transaction: unknown,
    fn: (executor: SqlExecutor) => Promise<T>,
  ): Promise<T>;

  appendStream(append: WorkflowStreamAppend): Promise<WorkflowStreamAppendResult | null> {
    return appendStream(this.executor, this.streams, append);
  }

  readStream(query: WorkflowStreamQuery): Promise<WorkflowStreamPage> {
    return readStream(this.executor, this.streams, query);
  }

  createCallback(callback: NewWorkflowCallback): Promise<boolean> {
    return this.callbacks.create(callback);
  }

  getCallback(id: string, name: string): Promise<WorkflowCallbackRecord | null> {
    return this.callbacks.get(id, name);
  }

  settleCallback(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult> {
    return this.callbacks.settle(settle);
  }

  expireCallback(id: string, name: string, now: number): Promise<boolean> {
    return this.callbacks.expire(id, name, now);
  }

  async create(instance: NewWorkflowInstance): Promise<CreateResult> {
    this.input.newInstance(instance);
    return this.creates.create(instance);
  }

  /** `client.fork()`: the create, the origin and the journal in one transaction of the store's own. */
  async fork(fork: WorkflowFork): Promise<CreateResult> {
    this.input.newInstance(fork.instance);
    this.input.entries(fork.instance.id, fork.entries);
    return this.executor.transaction((tx) =>
      forkWith(tx, (on) => this.creates.createInTransaction(on, fork.instance), this.forks, fork),
    );
  }

  /** `fork()` in the application's transaction (a handle as for `createInTransaction()`), in a savepoint of it. */
  async forkInTransaction(transaction: unknown, fork: WorkflowFork): Promise<CreateResult> {
    this.input.newInstance(fork.instance);
    this.input.entries(fork.instance.id, fork.entries);
    return this.inApplicationTransaction(transaction, (executor) =>
      forkWith(executor, (on) => this.creates.createInTransaction(on, fork.instance), this.forks, fork),
    );
  }

  get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    return this.reads.get(id, options);
  }

  list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    return this.reads.list(query);
  }

  countDue(now: number, cap: number): Promise<number> {
    return this.reads.countDue(now, cap);
  }

  countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]> {
    return this.reads.countUndeclaredDue(query);
  }

  requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    return this.cancels.requestCancel(this.executor, id, request);
  }

  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    this.input.entries(id, reopen.entries);
    return reopenInstance(this.executor, this.reopens, id, reopen);
  }

  delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    return deleteInstance(this.executor, this.deletes, id, statuses);
  }

  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    this.input.signal(signal);
    return this.signalsOf.send(this.executor, signal);
  }

  signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    return this.signalsOf.read(this.executor, query);
  }

  purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    return purgeStore(this.executor, this.deletes, query);
  }

  renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    return this.renewals.renew(this.executor, id, token, leaseUntil);
  }

  pause(id: string, request: WorkflowPauseRequest): Promise<boolean> {
    return this.pauses.pause(this.executor, id, request);
  }

  pauseInTransaction(transaction: unknown, id: string, request: WorkflowPauseRequest): Promise<boolean> {
    return this.inApplicationTransaction(transaction, (executor) => this.pauses.pause(executor, id, request));
  }

  resume(id: string, now: number): Promise<boolean> {
    return this.pauses.resume(this.executor, id, now);
  }

  resumeInTransaction(transaction: unknown, id: string, now: number): Promise<boolean> {
    return this.inApplicationTransaction(transaction, (executor) => this.pauses.resume(executor, id, now));
  }

  async pauseWorkflow(target: WorkflowPauseTarget, request: WorkflowPauseRequest): Promise<boolean> {
    this.input.pauseTarget(target.workflow, target.version);
    return this.pauses.pauseWorkflow(this.executor, target, request);
  }

  async pauseWorkflowInTransaction(
    transaction: unknown,
    target: WorkflowPauseTarget,
    request: WorkflowPauseRequest,
  ): Promise<boolean> {
    this.input.pauseTarget(target.workflow, target.version);
    return this.inApplicationTransaction(transaction, (executor) =>
      this.pauses.pauseWorkflow(executor, target, request),
    );
  }

  async resumeWorkflow(target: WorkflowPauseTarget): Promise<boolean> {
    this.input.pauseTarget(target.workflow, target.version);
    return this.pauses.resumeWorkflow(this.executor, target);
  }

  async resumeWorkflowInTransaction(transaction: unknown, target: WorkflowPauseTarget): Promise<boolean> {
    this.input.pauseTarget(target.workflow, target.version);
    return this.inApplicationTransaction(transaction, (executor) => this.pauses.resumeWorkflow(executor, target));
  }

  /** A page of a bulk action, in one transaction of the store's own. */
  async changeMany(ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    checkBulkIds(ids);
    if (ids.length === 0) return [];
    return this.bulkChanges.changeAlone(this.executor, ids, change);
  }

  /** `changeMany()` in the application's transaction, in a savepoint of it. */
  async changeManyInTransaction(
    transaction: unknown,
    ids: readonly string[],
    change: WorkflowBulkChange,
  ): Promise<string[]> {
    checkBulkIds(ids);
    return this.inApplicationTransaction(transaction, (executor) => this.bulkChanges.change(executor, ids, change));
  }

  pausedWorkflows(): Promise<WorkflowPausedWorkflow[]> {
    return this.pauses.pausedWorkflows(this.executor);
  }

  recordProcess(record: WorkflowProcessRecord, staleBefore: number): Promise<void> {
    return this.processRecords.record(this.executor, record, staleBefore);
  }

  removeProcess(id: string): Promise<boolean> {
    return this.processRecords.remove(this.executor, id);
  }

  processes(seenSince: number): Promise<WorkflowProcessRecord[]> {
    return this.processRecords.live(this.executor, seenSince);
  }

  /** Applies the pending migrations under the migration lock; resolves to their names (`0001_init`...). */
  async migrate(): Promise<string[]> {
    return (await this.migrationRunner().migrate()).map(migrationLabel);
  }

  /** Re-encryption: replaces each payload still holding its `from` (see `payloadRewriteStatements()`). */
  rewritePayloads(id: string, rewrite: WorkflowPayloadRewrite): Promise<number> {
    return this.payloadRewrites.rewrite(id, rewrite);
  }

  /** Re-encryption: one page of every stored signal, in id order. */
  listSignals(query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> {
    return this.payloadRewrites.page(query);
  }

  /** Re-encryption: replaces a signal's payload while it is still `change.from`. */
  rewriteSignalPayload(id: number, change: WorkflowPayloadChange): Promise<boolean> {
    return this.payloadRewrites.rewriteSignal(id, change);
  }

  saveSchedule(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    return this.scheduleStore.save(save);
  }

  getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    return this.scheduleStore.get(id);
  }

  listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return this.scheduleStore.list(query);
  }

  deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.scheduleStore.delete(id, revision);
  }

  claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    return this.scheduleStore.claim(request);
  }

  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.scheduleStore.write(id, token, write);
  }

  createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    return this.scheduleStore.createOccurrence(scheduleId, token, instance, revision);
  }
}
