import type { WorkflowInstance, WorkflowStatus } from './workflow-instance.js';
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
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowStore,
  WorkflowWrite,
} from './workflow-store.js';

/**
 * The one way to the store: the engine, the client, the worker and the scheduler hold this and
 * never the configured `WorkflowStore` itself. Each method below is the one place where its
 * operation's values pass in (inputs, step results, signal payloads, custom statuses, errors) and
 * out (instances, journals, signals, schedules), so payload codecs (encryption) plug in here and
 * the store only ever sees what they encoded. Until a codec is configured every call passes
 * through unchanged.
 *
 * Also runs the store's `init()` at startup and `close()` at shutdown (Nest calls the two hooks).
 * The rules each operation follows are the store's: see `WorkflowStore`.
 */
export class WorkflowStorage {
  constructor(private readonly store: WorkflowStore) {}

  /** Prepares the store (a SQL store migrates or checks its schema) before any worker starts. */
  async onModuleInit(): Promise<void> {
    await this.store.init?.();
  }

  /** Closes what the store opened itself (never the application's pool). */
  async onApplicationShutdown(): Promise<void> {
    await this.store.close?.();
  }

  // ---- instances ----

  /** In: `input`. Out: the stored instance. */
  create(instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    return this.store.create(instance);
  }

  /** `create()` inside the application's transaction; a `TypeError` when the store can't. */
  createInTransaction(transaction: unknown, instance: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    if (!this.store.createInTransaction) throw this.noTransactions('start()');
    return this.store.createInTransaction(transaction, instance);
  }

  /** Out: the instance, its waits and (on request) its journal. */
  get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    return this.store.get(id, options);
  }

  /** Out: one page of instances. */
  list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    return this.store.list(query);
  }

  requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    return this.store.requestCancel(id, request);
  }

  /** In: the reopened entries and the error kept while compensations are retried. */
  reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    return this.store.reopen(id, reopen);
  }

  delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    return this.store.delete(id, statuses);
  }

  purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    return this.store.purge(query);
  }

  // ---- signals ----

  /** In: the payload. */
  signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    return this.store.signal(signal);
  }

  /** `signal()` inside the application's transaction; a `TypeError` when the store can't. */
  signalInTransaction(transaction: unknown, signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    if (!this.store.signalInTransaction) throw this.noTransactions('signal()');
    return this.store.signalInTransaction(transaction, signal);
  }

  /** Out: the signals' payloads. */
  signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    return this.store.signals(query);
  }

  // ---- the lease holder ----

  /** Out: the claimed instances (their inputs). */
  claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    return this.store.claim(request);
  }

  renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    return this.store.renew(id, token, leaseUntil);
  }

  /** In: journal entries, the output, the error, the custom status and a signal's payload. */
  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    return this.store.write(id, token, write);
  }

  // ---- schedules ----

  /** In: the schedule's input. Out: the schedule as stored. */
  saveSchedule(schedule: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    return this.store.saveSchedule(schedule);
  }

  /** Out: the schedule. */
  getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    return this.store.getSchedule(id);
  }

  /** Out: one page of schedules. */
  listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return this.store.listSchedules(query);
  }

  deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.store.deleteSchedule(id, revision);
  }

  /** Out: the claimed schedules. */
  claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    return this.store.claimSchedules(request);
  }

  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.store.writeSchedule(id, token, write);
  }

  // ---- wake-ups ----

  /**
   * Calls `listener` when another process may have made work due; resolves to a function that
   * stops it, or `null` when the store can't notify (polling alone then finds the work).
   */
  async listen(listener: () => void): Promise<(() => Promise<void>) | null> {
    return this.store.listen ? this.store.listen(listener) : null;
  }

  private noTransactions(operation: string): TypeError {
    return new TypeError(
      `${operation} with a transaction needs a store that supports it; ${this.store.constructor.name} does not. ` +
        'Use a SQL store (such as PostgresWorkflowStore), or leave the transaction option out.',
    );
  }
}
