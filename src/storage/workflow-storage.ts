import type { PayloadCodecChain } from '../codec/payload-codec-chain.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import { PayloadEncoding } from './payload-encoding.js';
import {
  PayloadReencryption,
  type WorkflowReencryptOptions,
  type WorkflowReencryptResult,
} from './payload-reencryption.js';
import { initStore } from './store-startup.js';
import type { WorkflowInstance, WorkflowJournalEntry, WorkflowStatus } from './workflow-instance.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowCancelRequest,
  WorkflowFork,
  WorkflowClaim,
  WorkflowClaimRequest,
  WorkflowInstanceDetails,
  WorkflowLeaseFlags,
  WorkflowListenOptions,
  WorkflowListQuery,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowReopen,
  WorkflowSignalQuery,
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowStore,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
  WorkflowWakeUpKind,
  WorkflowWrite,
} from './workflow-store.js';
import type { WorkflowStoreTransaction, WorkflowStoreTransactionOptions } from './workflow-store-transactions.js';
import type { WorkflowPausedWorkflow, WorkflowPauseRequest, WorkflowPauseTarget } from './workflow-store-pauses.js';
import type { WorkflowBulkChange } from './workflow-store-bulk.js';
import type { WorkflowProcessRecord } from './workflow-store-processes.js';
import { WorkflowScheduleStorage } from './workflow-schedule-storage.js';
import { WorkflowStreamStorage } from './workflow-stream-storage.js';
import { WorkflowCallbackStorage } from './workflow-callback-storage.js';
import { UNREADABLE_RETRY_DELAY, type WorkflowStorageOptions } from './workflow-storage-options.js';

export { UNREADABLE_RETRY_DELAY, type WorkflowStorageOptions } from './workflow-storage-options.js';

/**
 * The one way to the store: the engine, the client, the worker and the scheduler hold this and
 * never the configured `WorkflowStore` itself. Each method below is the one place where its
 * operation's values pass in (inputs, step results, signal payloads, custom statuses, errors) and
 * out (instances, journals, signals, schedules), so payload codecs (encryption) plug in here and
 * the store only ever sees what they encoded (see payload-encoding.ts for exactly which fields);
 * ids, names, keys, statuses and times pass as they are, since the store indexes them. Without a
 * codec every call passes straight through.
 *
 * Also runs the store's `init()` at startup and `close()` at shutdown (Nest calls the two hooks).
 * The rules each operation follows are the store's: see `WorkflowStore`. The schedules' operations
 * are in `schedules`, over the same store and codecs.
 */
export class WorkflowStorage {
  /** The schedules' operations (save, read, claim, occurrences), through the same codecs. */
  readonly schedules: WorkflowScheduleStorage;
  /** The streams' operations (`ctx.stream()`, `client.readStream()`), through the same codecs. */
  readonly streams: WorkflowStreamStorage;
  /** The callbacks' operations (`ctx.createCallback()`, `client.completeCallback()`), through the same codecs. */
  readonly callbacks: WorkflowCallbackStorage;
  private readonly encoding: PayloadEncoding | null;

  constructor(
    private readonly store: WorkflowStore,
    private readonly options: WorkflowStorageOptions = {},
  ) {
    this.encoding = options.codecs ? new PayloadEncoding(options.codecs) : null;
    this.schedules = new WorkflowScheduleStorage(store, options, this.encoding);
    this.streams = new WorkflowStreamStorage(store, this.encoding, options.streamLimits);
    this.callbacks = new WorkflowCallbackStorage(store, this.encoding);
  }

  /** The configured codecs, or `null`. */
  get codecs(): PayloadCodecChain | null {
    return this.encoding?.chain ?? null;
  }

  /** Prepares the store (a SQL store migrates or checks its schema) before any worker starts. */
  async onModuleInit(): Promise<void> {
    const init = this.store.init?.bind(this.store);
    if (init) await initStore(init, this.options.startup ?? { retryAttempts: 0, retryDelay: 0 });
  }

  /** Closes what the store opened itself (never the application's pool). */
  async onApplicationShutdown(): Promise<void> {
    await this.store.close?.();
  }

  // ---- instances ----

  /** In: `input`. Out: the stored instance. */
  async create(instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    const { encoding } = this;
    if (!encoding) return this.store.create(instance);
    return encoding.created(instance, await this.store.create(await encoding.newInstance(instance)));
  }

  /** `create()` inside the application's transaction; a `TypeError` when the store can't. */
  async createInTransaction(
    transaction: unknown,
    instance: NewWorkflowInstance,
  ): Promise<{ instance: WorkflowInstance; created: boolean }> {
    if (!this.store.createInTransaction) throw this.noTransactions('start()');
    const { encoding } = this;
    if (!encoding) return this.store.createInTransaction(transaction, instance);
    return encoding.created(
      instance,
      await this.store.createInTransaction(transaction, await encoding.newInstance(instance)),
    );
  }

  /**
   * In: the fork's `input` and its journal. Out: the stored instance. A `TypeError` when the store
   * can't fork (a store of your own without `fork()`), or, with `transaction`, can't in a transaction.
   */
  async fork(fork: WorkflowFork, transaction?: unknown): Promise<{ instance: WorkflowInstance; created: boolean }> {
    const { store, encoding } = this;
    const method = transaction === undefined ? store.fork : store.forkInTransaction;
    if (!method) {
      if (transaction !== undefined) throw this.noTransactions('fork()');
      throw new TypeError(
        `The configured store (${store.constructor?.name ?? 'a custom store'}) has no fork(): fork() needs a store that implements it, as every store shipped here does.`,
      );
    }
    const call = (f: WorkflowFork) =>
      transaction === undefined ? store.fork!(f) : store.forkInTransaction!(transaction, f);
    if (!encoding) return call(fork);
    const encoded = {
      ...fork,
      instance: await encoding.newInstance(fork.instance),
      entries: await encoding.entries(fork.entries),
    };
    return encoding.created(fork.instance, await call(encoded));
  }

  /**
   * Out: the instance, its waits and (on request) its journal, decoded. For the engine a payload no
   * configured codec can read throws `WorkflowPayloadError`; with `readable: true` (readers such as
   * `getStatus()`) it reads as `undefined` and is listed in `unreadable` instead.
   */
  async get(
    id: string,
    options: { journal?: boolean; readable?: boolean } = {},
  ): Promise<WorkflowInstanceDetails | null> {
    const details = await this.store.get(id, options.journal ? { journal: true } : undefined);
    if (!details || !this.encoding) return details;
    return options.readable ? this.encoding.readable(details) : this.encoding.details(details);
  }

  /**
   * Encodes a journal entry ahead of its write when a codec is configured (`null` when none is:
   * nothing to do), so a value the codec refuses fails here; the write reuses the encoded entry.
   */
  prepareEntry(entry: WorkflowJournalEntry): Promise<void> | null {
    return this.encoding ? this.encoding.prepare(entry) : null;
  }

  /**
   * Encodes a workflow's output (`what` it is) ahead of its final write, which reuses it: a refusal
   * (a KMS's size limit) is the value's, not a store outage to retry at every execution.
   */
  async prepareOutput(value: unknown, what: string): Promise<void> {
    if (!this.encoding) return;
    try {
      await this.encoding.prepareOutput(value);
    } catch (error) {
      throw new TypeError(
        `${what} could not be encoded by the payload codec (${error instanceof Error ? error.message : String(error)}). ` +
          'Return less (keep large data elsewhere and return a reference to it), or fix the codec.',
        { cause: error },
      );
    }
  }

  /** Out: one page of instances, decoded for readers (an unreadable payload is listed, never thrown). */
  async list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    const rows = await this.store.list(query);
    const { encoding } = this;
    if (!encoding || rows.length === 0) return rows;
    return Promise.all(rows.map((row) => encoding.readable(row)));
  }

  /** In: the reason. */
  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    if (!this.encoding || request.reason === null) return this.store.requestCancel(id, request);
    return this.store.requestCancel(id, { ...request, reason: await this.encoding.reason(request.reason) });
  }

  /** In: the reason. With `transaction`, inside the application's transaction (a `TypeError` when the store can't). */
  async pause(id: string, request: WorkflowPauseRequest, transaction?: unknown): Promise<boolean> {
    const encoded = await this.pauseReason(request);
    if (transaction === undefined) return this.store.pause(id, encoded);
    if (!this.store.pauseInTransaction) throw this.noTransactions('pause()');
    return this.store.pauseInTransaction(transaction, id, encoded);
  }

  /** With `transaction`, inside the application's transaction (a `TypeError` when the store can't). */
  resume(id: string, now: number, transaction?: unknown): Promise<boolean> {
    if (transaction === undefined) return this.store.resume(id, now);
    if (!this.store.resumeInTransaction) throw this.noTransactions('resume()');
    return this.store.resumeInTransaction(transaction, id, now);
  }

  /** In: the reason. With `transaction`, inside the application's transaction (a `TypeError` when the store can't). */
  async pauseWorkflow(
    target: WorkflowPauseTarget,
    request: WorkflowPauseRequest,
    transaction?: unknown,
  ): Promise<boolean> {
    const encoded = await this.pauseReason(request);
    if (transaction === undefined) return this.store.pauseWorkflow(target, encoded);
    if (!this.store.pauseWorkflowInTransaction) throw this.noTransactions('pauseWorkflow()');
    return this.store.pauseWorkflowInTransaction(transaction, target, encoded);
  }

  /** With `transaction`, inside the application's transaction (a `TypeError` when the store can't). */
  resumeWorkflow(target: WorkflowPauseTarget, transaction?: unknown): Promise<boolean> {
    if (transaction === undefined) return this.store.resumeWorkflow(target);
    if (!this.store.resumeWorkflowInTransaction) throw this.noTransactions('resumeWorkflow()');
    return this.store.resumeWorkflowInTransaction(transaction, target);
  }

  /**
   * One page of a bulk action (`WorkflowStore.changeMany()`), its reason encoded; with
   * `transaction`, inside the application's transaction (a `TypeError` when the store can't). On a
   * store of your own without `changeMany()`, one single-instance call per id (no transaction).
   */
  async changeMany(ids: readonly string[], change: WorkflowBulkChange, transaction?: unknown): Promise<string[]> {
    const encoded = await this.bulkReason(change);
    if (transaction !== undefined) {
      if (!this.store.changeManyInTransaction) throw this.noTransactions('A bulk action');
      return this.store.changeManyInTransaction(transaction, ids, encoded);
    }
    if (this.store.changeMany) return this.store.changeMany(ids, encoded);
    const changed: string[] = [];
    for (const id of ids) if (await this.changeOne(id, encoded)) changed.push(id);
    return changed;
  }

  private changeOne(id: string, change: WorkflowBulkChange): Promise<boolean> {
    if (change.kind === 'cancel') return this.store.requestCancel(id, change.request);
    if (change.kind === 'pause') return this.store.pause(id, change.request);
    return this.store.resume(id, change.now);
  }

  private async bulkReason(change: WorkflowBulkChange): Promise<WorkflowBulkChange> {
    if (change.kind === 'resume' || !this.encoding || change.request.reason === null) return change;
    const reason = await this.encoding.reason(change.request.reason);
    return change.kind === 'cancel'
      ? { kind: 'cancel', request: { ...change.request, reason } }
      : { kind: 'pause', request: { ...change.request, reason } };
  }

  /** Out: the stored pauses of workflows, their reasons decoded (an unreadable one reads as `null`). */
  async pausedWorkflows(): Promise<WorkflowPausedWorkflow[]> {
    const pauses = await this.store.pausedWorkflows();
    const { encoding } = this;
    if (!encoding) return pauses;
    return Promise.all(
      pauses.map(async (pause) => ({ ...pause, reason: await encoding.readableReason(pause.reason) })),
    );
  }

  private async pauseReason(request: WorkflowPauseRequest): Promise<WorkflowPauseRequest> {
    if (!this.encoding || request.reason === null) return request;
    return { ...request, reason: await this.encoding.reason(request.reason) };
  }

  /** In: the reopened entries and the error kept while compensations are retried. */
  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    return this.store.reopen(id, this.encoding ? await this.encoding.reopen(reopen) : reopen);
  }

  delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    return this.store.delete(id, statuses);
  }

  purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    return this.store.purge(query);
  }

  // ---- signals ----

  /** In: the payload. */
  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    return this.store.signal(this.encoding ? await this.encoding.signal(signal) : signal);
  }

  /** `signal()` inside the application's transaction; a `TypeError` when the store can't. */
  async signalInTransaction(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    if (!this.store.signalInTransaction) throw this.noTransactions('signal()');
    return this.store.signalInTransaction(transaction, this.encoding ? await this.encoding.signal(signal) : signal);
  }

  /** Out: the signals' payloads, decoded (`WorkflowPayloadError` when one can't be read). */
  async signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    const records = await this.store.signals(query);
    const { encoding } = this;
    if (!encoding || records.length === 0) return records;
    return Promise.all(records.map((record) => encoding.signalRecord(record)));
  }

  // ---- the worker processes (no payloads: names and versions pass as they are) ----

  /** Whether the store keeps process records (`WorkflowProcessStore`). */
  get recordsProcesses(): boolean {
    const { store } = this;
    return Boolean(store.recordProcess && store.removeProcess && store.processes);
  }

  /** Records this process (a no-op on a store without process records). */
  async recordProcess(record: WorkflowProcessRecord, staleBefore: number): Promise<void> {
    if (this.recordsProcesses) await this.store.recordProcess!(record, staleBefore);
  }

  /** Removes this process's record (a no-op on a store without process records). */
  async removeProcess(id: string): Promise<void> {
    if (this.recordsProcesses) await this.store.removeProcess!(id);
  }

  /** The processes seen since `seenSince`; `null` when the store keeps no process records. */
  async processes(seenSince: number): Promise<WorkflowProcessRecord[] | null> {
    return this.recordsProcesses ? this.store.processes!(seenSince) : null;
  }

  /** The signals no instance took (no payloads, so nothing to decode); `null` when the store can't list them. */
  async untakenSignals(query: WorkflowUntakenSignalQuery): Promise<WorkflowUntakenSignal[] | null> {
    return this.store.untakenSignals ? this.store.untakenSignals(query) : null;
  }

  // ---- the lease holder ----

  /**
   * Out: the claimed instances, decoded. One with a payload no configured codec can read is not
   * returned: it is handed back at once, due again after `UNREADABLE_RETRY_DELAY`, and reported to
   * `onUnreadable`, so a missing key never stops the worker and the instance runs once it is back.
   */
  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    const claim = await this.store.claim(request);
    const { encoding } = this;
    if (!encoding || claim.instances.length === 0) return claim;
    const decoded = await Promise.all(
      claim.instances.map(async (instance) => {
        try {
          return await encoding.instance(instance);
        } catch (error) {
          if (!(error instanceof WorkflowPayloadError)) throw error;
          await this.handBackUnreadable(instance, request.token, claim.lastSignalId, error, request.now);
          return null;
        }
      }),
    );
    return {
      instances: decoded.filter((instance): instance is WorkflowInstance => instance !== null),
      lastSignalId: claim.lastSignalId,
    };
  }

  /**
   * Hands back, under the lease `token`, an instance whose payloads this process can't decode: due
   * again after `UNREADABLE_RETRY_DELAY`, with no waits (a run reads its signals again from its
   * journal's cursors, so none is lost). Returns whether the lease still stood.
   */
  async handBackUnreadable(
    instance: WorkflowInstance,
    token: string,
    signalCursor: number,
    error: WorkflowPayloadError,
    now: number,
  ): Promise<boolean> {
    const landed = await this.store.write(instance.id, token, {
      now,
      entries: [],
      release: { wakeAt: now + UNREADABLE_RETRY_DELAY, waits: [], signalCursor },
    });
    this.options.onUnreadable?.(`Instance "${instance.id}" (${instance.workflow}@${instance.version})`, error);
    return landed;
  }

  renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    return this.store.renew(id, token, leaseUntil);
  }

  /** In: journal entries, the output, the error, the custom status and a signal's payload. */
  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    // Without a codec, the store's own promise: no extra async step on the hot path.
    const { encoding } = this;
    if (encoding) return encoding.write(write).then((encoded) => this.store.write(id, token, encoded));
    try {
      return this.store.write(id, token, write);
    } catch (error) {
      // A store of your own may throw before its promise: still a rejection, as from an async call.
      return Promise.reject(error as Error);
    }
  }

  /** The configured store's class name, for messages. */
  get storeName(): string {
    return this.store.constructor.name;
  }

  /** Whether the store can run `ctx.transaction()` (a SQL store). */
  get runsTransactions(): boolean {
    return typeof this.store.transaction === 'function';
  }

  /**
   * `ctx.transaction()`: `body` runs in a transaction of the store's database; what it writes with
   * `tx.write()` is encoded here first, like every `write()`. A `TypeError` when the store can't.
   */
  transaction<T>(
    id: string,
    token: string,
    body: (tx: WorkflowStoreTransaction) => Promise<T>,
    options: WorkflowStoreTransactionOptions,
  ): Promise<T> {
    if (!this.store.transaction) return Promise.reject(this.noTransactions('ctx.transaction()'));
    return this.store.transaction(
      id,
      token,
      (tx) =>
        body({
          handle: tx.handle,
          write: async (write) => tx.write(this.encoding ? await this.encoding.write(write) : write),
        }),
      options,
    );
  }

  // ---- re-encryption ----

  /**
   * Rewrites every stored payload that is not under the current codec (see `PayloadReencryption`):
   * safe beside running workers, resumable, with progress. `now` stamps the schedules it saves.
   */
  reencrypt(options: WorkflowReencryptOptions, now: () => number): Promise<WorkflowReencryptResult> {
    if (!this.encoding) {
      return Promise.reject(
        new TypeError('Re-encryption needs a codec: configure the codec option, with the new key first, then run it.'),
      );
    }
    return new PayloadReencryption(this.store, this.encoding.chain, now).run(options);
  }

  // ---- wake-ups ----

  /** Due instances no live lease holds, up to `cap`; `null` when the store can't count them. */
  async countDue(now: number, cap: number): Promise<number | null> {
    return this.store.countDue ? this.store.countDue(now, cap) : null;
  }

  /** Due instances of versions not in `query.workflows`, per version (see `WorkflowStore.countUndeclaredDue`); `null` when the store can't count them. */
  async countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[] | null> {
    return this.store.countUndeclaredDue ? this.store.countUndeclaredDue(query) : null;
  }

  /**
   * Calls `listener` when another process may have made work due (with the instance's id when the
   * store names the one it made due, and `'cancel'` when a cancel or terminate of it was stored: see
   * `WorkflowWakeUpKind`); resolves to a function that stops it, or `null` when the store can't
   * notify (polling alone then finds the work). `options`: see `WorkflowListenOptions`.
   */
  async listen(
    listener: (id?: string, kind?: WorkflowWakeUpKind) => void,
    options?: WorkflowListenOptions,
  ): Promise<(() => Promise<void>) | null> {
    return this.store.listen ? this.store.listen(listener, options) : null;
  }

  /**
   * Calls `listener` with the id of each instance that ends in any process (`null`: some may have
   * been missed), or with `id`'s alone when the store only watches the instance waited for;
   * resolves to a function that stops it, or `null` when the store can't notify.
   */
  async listenForEnds(listener: (id: string | null) => void, id?: string): Promise<(() => Promise<void>) | null> {
    return this.store.listenForEnds ? this.store.listenForEnds(listener, id) : null;
  }

  /**
   * Asks that `id`'s end reach `listenForEnds()` in every process (see
   * `WorkflowStore.requestEndNotice`): `false` when the instance is finished or unknown already,
   * `true` when its end will be heard or the store needs no asking.
   */
  async requestEndNotice(id: string, now: number): Promise<boolean> {
    return this.store.requestEndNotice ? this.store.requestEndNotice(id, now) : true;
  }

  private noTransactions(operation: string): TypeError {
    return new TypeError(
      `${operation} with a transaction needs a store that supports it; ${this.store.constructor.name} does not. ` +
        'Use a SQL store (such as PostgresWorkflowStore), or leave the transaction option out.',
    );
  }
}
