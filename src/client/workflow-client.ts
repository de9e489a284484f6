import type { WorkflowReencryptOptions, WorkflowReencryptResult } from '../storage/payload-reencryption.js';
import { setMaxListeners } from 'node:events';
import { parseUntakenSignalsRequest } from './untaken-signals-request.js';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { WorkflowEvents } from '../events/workflow-events.js';
import type { WorkflowDefinition, WorkflowReference } from '../engine/workflow-context.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowRuntime } from '../runtime/workflow-runtime.js';
import type { WorkflowSignal } from '../signals/workflow-signal.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import type {
  NewWorkflowSignal,
  WorkflowInstanceDetails,
  WorkflowPurgeResult,
  WorkflowUntakenSignal,
} from '../storage/workflow-store.js';
import { parseDuration, type Duration } from '../time/duration.js';
import { WORKFLOWS_OBSERVER, WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { WorkflowObserver } from '../engine/workflow-observer.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';
import { cancelRefused, parseCancelRequest } from './cancel-request.js';
import { deleteFinished } from './finished-delete.js';
import { waitForResult } from './instance-result.js';
import { parseListRequest, type WorkflowListOptions } from './list-request.js';
import { parsePurgeRequest, purgeInBatches } from './purge-request.js';
import { parseSignalRequest, type WorkflowSignalOptions } from './signal-request.js';
import { assertSameStart, parseStartRequest, type WorkflowStartOptions } from './start-request.js';
import type { WorkflowHandle } from './workflow-handle.js';
import { exportHistory } from './history-export.js';
import type { WorkflowHistory } from '../engine/workflow-history.js';
import { actOnMatching, inStorePages, oneAtATime, type BulkReads } from './bulk-actions.js';
import {
  checkBulkOptions,
  parseBulkFilter,
  type BulkSelection,
  type WorkflowBulkOptions,
  type WorkflowBulkFilter,
  type WorkflowBulkResult,
} from './bulk-request.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { FINISHED_STATUSES } from '../storage/workflow-instance.js';
import { forkInstance, type WorkflowForkOptions } from './instance-fork.js';
import { settleCallback, type WorkflowCallbackCompletion } from './callback-completion.js';
import {
  parseReadStreamOptions,
  WorkflowStreamReader,
  type WorkflowReadStreamOptions,
  type WorkflowStreamItem,
} from './stream-reader.js';
import { InstancePauses } from './instance-pauses.js';
import type { WorkflowPauseOptions, WorkflowPauseWorkflowOptions } from './pause-request.js';
import type { WorkflowPausedWorkflow } from '../storage/workflow-store-pauses.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
import { PROCESS_STALE_AFTER } from '../runtime/process-heartbeat.js';

type WorkflowClass<I, O> = abstract new (...args: never[]) => WorkflowDefinition<I, O>;

/** Starts, signals, inspects and manages workflow instances. Inject it anywhere. */
@Injectable()
export class WorkflowClient implements OnModuleDestroy {
  /** Aborted when the module closes: waits still going (`handle.result()`) reject instead of polling on. */
  private readonly closing = new AbortController();
  /** pause(), resume(), pauseWorkflow(), resumeWorkflow() (instance-pauses.ts). */
  private readonly pauses: InstancePauses;

  constructor(
    private readonly storage: WorkflowStorage,
    private readonly registry: WorkflowRegistry,
    private readonly runtime: WorkflowRuntime,
    private readonly events: WorkflowEvents,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly options: ResolvedWorkflowsOptions,
    @Inject(WORKFLOWS_OBSERVER) private readonly observer: WorkflowObserver,
  ) {
    // Each waiting result() listens for the close: any number may wait at once without a leak warning.
    setMaxListeners(0, this.closing.signal);
    this.pauses = new InstancePauses({
      storage,
      runtime,
      events,
      observer,
      now: () => this.options.clock.now(),
      workflowName: (workflow) =>
        typeof workflow === 'function' ? this.registry.resolve(workflow as WorkflowReference).name : workflow,
    });
  }

  /** The module is closing: every `handle.result()` still waiting rejects with `WorkflowClientClosedError`. */
  onModuleDestroy(): void {
    this.closing.abort();
  }

  /**
   * Starts an instance. Idempotent by `id`: starting an id that exists returns that instance
   * (whatever its status) when the workflow and input match, and throws
   * `WorkflowAlreadyStartedError` when they don't. With `debounce`, starts with one key join the
   * instance that has not started yet (see `WorkflowStartOptions.debounce`).
   */
  async start<I, O>(
    workflow: WorkflowClass<I, O> | string,
    input: I,
    options: WorkflowStartOptions = {},
  ): Promise<WorkflowHandle<O>> {
    const instance = parseStartRequest(input, options, {
      resolve: (version) => this.registry.resolve(workflow as WorkflowReference, version),
      now: () => this.options.clock.now(),
      traceContext: (name, id) => this.observer.startContext(name, id),
    });
    const result = await this.runtime.createInstance(instance, options.transaction);
    // A debounced start that joined a burst gets that burst's instance, whatever its id.
    if (instance.debounce) return this.handle<O>(result.instance.id);
    if (!result.created) assertSameStart(result.instance, instance);
    return this.handle<O>(instance.id);
  }

  /** A handle on an existing instance (no store call until you use it). */
  handle<O = unknown>(id: string): WorkflowHandle<O> {
    return {
      id,
      status: (options) => this.getStatus(id, options),
      result: (options) => this.result<O>(id, options?.timeout),
    };
  }

  /**
   * Sends a signal: stored even when nothing waits yet, and taken by the oldest matching wait of
   * every instance started before it. With `id`, a repeat is stored once (`created: false`).
   * `woken` counts the instances suspended on it right now: `woken: 0` is not an error (a wait
   * reached later still takes it), and it is also what a misspelt name or key gets, so a signal
   * nobody ever takes shows in `untakenSignals()` and on the dashboard's Signals page.
   */
  async signal<T>(
    signal: WorkflowSignal<T> | string,
    payload: T,
    options: WorkflowSignalOptions = {},
  ): Promise<{ id: number; woken: number; created: boolean }> {
    const request = parseSignalRequest(signal, payload, options, () => this.options.clock.now());
    const result = await this.runtime.signal(request, options.transaction);
    return { id: result.id, woken: result.woken, created: result.created };
  }

  /**
   * Up to `limit` (default 50, at most 1000) signals no stored instance took, newest first, by name
   * and key with their time: among the newest 1,000 signals, those no wait took (yet). An old one
   * there often means a name or key no workflow waits for. `null` when the store can't tell
   * (a store without `untakenSignals()`). Reads the store's journal: for an operator, not a loop.
   */
  async untakenSignals(options: { limit?: number } = {}): Promise<WorkflowUntakenSignal[] | null> {
    return this.storage.untakenSignals(parseUntakenSignalsRequest(options));
  }

  /**
   * The worker processes live on this store, by start time: each process whose background worker
   * runs records itself (its worker id, host, pid, start, and the workflow versions it declares)
   * at startup and every 15 s, and removes itself at shutdown; one not seen for a minute (by this
   * module's clock: hosts' clocks must agree to within most of it) has crashed or is cut off and is
   * left out. Processes with `worker: false` record nothing. `null` when the store keeps no process
   * records (a store of your own without `recordProcess()`, `removeProcess()` and `processes()`).
   */
  processes(): Promise<WorkflowProcessRecord[] | null> {
    return this.storage.processes(this.options.clock.now() - PROCESS_STALE_AFTER);
  }

  /** Cancels: the instance stops at its next step and runs its compensations, then ends `cancelled`. */
  cancel(id: string, reason?: string): Promise<void> {
    return this.requestCancel(id, reason, false);
  }

  /** Terminates: the instance ends `cancelled` at once, without compensations (also while compensating). */
  terminate(id: string, reason?: string): Promise<void> {
    return this.requestCancel(id, reason, true);
  }

  /**
   * Pauses an unfinished instance: it shows status `paused` and no worker claims it until
   * `resume()`. An execution running in any process stops at its next step (a step already running
   * finishes and its result is recorded) and hands it back, within a heartbeat or at once where the
   * store notifies. Signals sent meanwhile are kept; sleeps, retry backoffs and wait timeouts that
   * fall due meanwhile take effect at resume; the run timeout keeps counting. `cancel()` and
   * `terminate()` still work (and end the pause). Pausing a paused instance changes nothing; a
   * finished one throws `WorkflowInvalidStateError`, an unknown id `WorkflowNotFoundError`.
   */
  pause(id: string, reason?: string, options?: WorkflowPauseOptions): Promise<void> {
    return this.pauses.pause(id, reason, options);
  }

  /**
   * Lifts `pause()`: the instance carries on where it stopped (what fell due meanwhile is due at
   * once). Resuming an instance that isn't paused changes nothing; a finished one throws
   * `WorkflowInvalidStateError`, an unknown id `WorkflowNotFoundError`.
   */
  resume(id: string, options?: WorkflowPauseOptions): Promise<void> {
    return this.pauses.resume(id, options);
  }

  /**
   * Pauses a workflow (a `@Workflow` class or its name), every version or `options.version`: once
   * this resolves, no process claims an instance of it until `resumeWorkflow()`, across restarts
   * (the pause is stored). Starts are still accepted and wait; executions running already run on
   * (pause them one by one with `pause()`). Pausing it again changes nothing.
   */
  pauseWorkflow(
    workflow: WorkflowClass<never, unknown> | string,
    options?: WorkflowPauseWorkflowOptions & { reason?: string },
  ): Promise<void> {
    return this.pauses.pauseWorkflow(workflow, options);
  }

  /**
   * Lifts `pauseWorkflow()` of exactly that target: without `version` the pause of every version
   * (a pause of one version stays until it is resumed with that version). Changes nothing when
   * there is no such pause.
   */
  resumeWorkflow(
    workflow: WorkflowClass<never, unknown> | string,
    options?: WorkflowPauseWorkflowOptions,
  ): Promise<void> {
    return this.pauses.resumeWorkflow(workflow, options);
  }

  /** The stored pauses of workflows (`pauseWorkflow()`), by workflow, then version (`null`: every version) first. */
  pausedWorkflows(): Promise<WorkflowPausedWorkflow[]> {
    return this.pauses.pausedWorkflows();
  }

  /**
   * Runs a `failed` or `cancelled` instance again from where it stopped (completed steps keep their
   * results; failed steps and steps whose compensations ran run again; a child's end that was not a
   * completion is taken again if the child was retried since, so the parent gets the child's new
   * end), or retries the compensations of a `compensation_failed` one. Of two concurrent retries,
   * one wins. A child's end it has not taken and that `purge()` removed is sent again from a
   * completed child; when it can't be (the child is gone, or did not complete) the retry throws
   * `WorkflowInvalidStateError` and changes nothing, instead of leaving the parent waiting forever;
   * so it does when a `purge()` or `delete()` running meanwhile takes the child away.
   */
  retry(id: string): Promise<void> {
    return this.runtime.retry(id, () => this.getStatus(id, { journal: true }));
  }

  /**
   * A new instance of the same workflow whose journal is a copy of the source's entries recorded
   * before `fromStep`: that step and everything after it run again (without `fromStep`, from the
   * top). The source is never changed and may be in any status. The fork's `getStatus()` shows
   * `forkedFrom: { id, step }`. What is copied (compensations and undone steps are not, nor children
   * whose end the source had not taken: see `forkedJournal()` and docs/client.md) and which
   * signals its waits can take (only those sent after the fork) is in docs/client.md. An unknown
   * step is refused with a `TypeError` and nothing stored. Emits `workflow-forked`.
   */
  async fork<O = unknown>(id: string, options: WorkflowForkOptions = {}): Promise<WorkflowHandle<O>> {
    const { instance, created } = await forkInstance(this.storage, id, options, {
      now: () => this.options.clock.now(),
      traceContext: (name, forkId) => this.observer.startContext(name, forkId),
      create: (fork, transaction) => this.runtime.createFork(fork, transaction),
    });
    if (created) {
      this.events.emit({
        type: 'workflow-forked',
        id: instance.id,
        workflow: instance.workflow,
        version: instance.version,
        at: instance.createdAt,
        from: instance.forkedFrom!,
      });
    }
    return this.handle<O>(instance.id);
  }

  /**
   * Cancels every unfinished instance `filter` matches (see `WorkflowBulkFilter`; one matching
   * everything needs `all: true`), as `cancel()` does each, in bounded batches: never one long
   * transaction (each page of up to 500 is one transaction of its own, with one notice to the
   * workers), each instance asked once. Resolves to how many matched and how many took the cancel
   * (finished ones, and ones asked before, don't). Safe to run again after a crash. With
   * `transaction`, every page's change commits or rolls back with the application's transaction.
   */
  cancelMany(filter: WorkflowBulkFilter, options: WorkflowBulkOptions = {}): Promise<WorkflowBulkResult> {
    return this.cancelMatching('cancelMany', filter, options, false);
  }

  /** `terminate()` on every unfinished instance `filter` matches, as `cancelMany()` goes about it. */
  terminateMany(filter: WorkflowBulkFilter, options: WorkflowBulkOptions = {}): Promise<WorkflowBulkResult> {
    return this.cancelMatching('terminateMany', filter, options, true);
  }

  /**
   * `retry()` on every failed, cancelled or compensation_failed instance `filter` matches, in
   * `cancelMany()`'s pages, one retry at a time per instance (a retry rewrites the instance's
   * journal: it has no page form, nor a `transaction`, as `retry()` has none); `changed` counts the
   * retries that landed (of two concurrent ones of an instance, one does). Run again after a crash,
   * it retries only what is still failed.
   */
  async retryMany(filter: WorkflowBulkFilter): Promise<WorkflowBulkResult> {
    const selection = parseBulkFilter('retryMany', filter, this.options.clock.now());
    return actOnMatching(
      this.bulkReads(),
      selection,
      oneAtATime(async (instance) => {
        if (!RETRYABLE.includes(instance.status)) return false;
        try {
          await this.retry(instance.id);
          return true;
        } catch (error) {
          // Moved on since it was listed (retried, deleted): nothing to do for it.
          if (error instanceof WorkflowInvalidStateError || error instanceof WorkflowNotFoundError) return false;
          throw error;
        }
      }),
    );
  }

  /**
   * Pauses every unfinished instance `filter` matches that is not paused already, as
   * `cancelMany()` goes about it (each one stops at its next step wherever it runs, and is not
   * claimed until resumed); `changed` counts those it paused.
   */
  async pauseMany(filter: WorkflowBulkFilter, options: WorkflowBulkOptions = {}): Promise<WorkflowBulkResult> {
    const selection = parseBulkFilter('pauseMany', filter, this.options.clock.now());
    checkBulkOptions('pauseMany', options, true);
    const reason = options.reason ?? null;
    return actOnMatching(
      this.bulkReads(),
      selection,
      inStorePages(
        (instance) => !FINISHED_STATUSES.includes(instance.status) && instance.status !== 'paused',
        (ids) =>
          this.runtime.changeMany(
            ids,
            { kind: 'pause', request: { reason, now: this.options.clock.now() } },
            options.transaction,
          ),
      ),
    );
  }

  /**
   * Resumes every paused instance `filter` matches, as `cancelMany()` goes about it: what fell due
   * during the pause is due at once. `changed` counts those it resumed.
   */
  async resumeMany(
    filter: WorkflowBulkFilter,
    options: Omit<WorkflowBulkOptions, 'reason'> = {},
  ): Promise<WorkflowBulkResult> {
    const selection = parseBulkFilter('resumeMany', filter, this.options.clock.now());
    checkBulkOptions('resumeMany', options, false);
    return actOnMatching(
      this.bulkReads(),
      selection,
      inStorePages(
        (instance) => instance.status === 'paused',
        (ids) => this.runtime.changeMany(ids, { kind: 'resume', now: this.options.clock.now() }, options.transaction),
      ),
    );
  }

  /**
   * Re-encryption after a key rotation: rewrites every stored payload (instances, their journals,
   * signals, schedules) that is not under the current codec, the first of the `codec` list, in
   * batches. Safe beside running workers (each payload is replaced only while it still holds what
   * was read); resumable (`resumeFrom` a progress's cursor, and payloads already current are never
   * written again). When the result's `remaining` is 0, the older codecs can be removed.
   * The CLI runs the same: `nest-workflows reencrypt`.
   */
  reencrypt(options: WorkflowReencryptOptions = {}): Promise<WorkflowReencryptResult> {
    return this.storage.reencrypt(options, () => this.options.clock.now());
  }

  /** The instance, with its waits and, on request, its journal and children. Throws `WorkflowNotFoundError`. */
  async getStatus(
    id: string,
    options: { journal?: boolean; children?: boolean } = {},
  ): Promise<WorkflowInstanceDetails> {
    const instance = await this.storage.get(id, { journal: options.journal === true, readable: true });
    if (!instance) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
    const details: WorkflowInstanceDetails = stripLease(instance);
    if (options.children) details.children = await this.allChildren(id);
    return details;
  }

  /**
   * The instance's history as plain JSON (the instance, its journal, the signals it took, the
   * library version), payloads decoded by the codec: keep it as a test fixture and replay it with
   * `replayHistory()` from `@nestjs/workflows/testing`. Throws `WorkflowNotFoundError`.
   */
  exportHistory(id: string): Promise<WorkflowHistory> {
    return exportHistory(this.storage, id, this.options.clock.now());
  }

  /**
   * Follows the stream `name` of instance `id` live, from any process: yields each item after
   * `options.after` in `seq` order, then waits for more, and ends once the stream is closed and read
   * to its end, or the instance has ended (a reader of a finished instance gets everything, then
   * ends). Values a step wrote in a failed attempt are followed by a `discarded` item naming it.
   * Throws `WorkflowNotFoundError` (on the first `next()`) for an unknown id.
   */
  readStream<T = unknown>(
    id: string,
    name: string,
    options: WorkflowReadStreamOptions = {},
  ): AsyncIterableIterator<WorkflowStreamItem<T>> {
    const { after, poll } = parseReadStreamOptions(id, name, options);
    return new WorkflowStreamReader<T>(this.storage, id, name, { after, poll, signal: options.signal });
  }

  /**
   * Completes the callback whose token `ctx.createCallback()` made: its `ctx.waitForCallback()`
   * resolves with `payload` (passed through the payload codec like any payload). Usable once: a
   * used, unknown or expired token throws `WorkflowCallbackTokenError` (its `reason` says which) and
   * stores nothing. Resolves to the instance's id and the callback's name.
   */
  completeCallback(token: string, payload?: unknown): Promise<WorkflowCallbackCompletion> {
    return settleCallback(this.storage, this.callbackDeps(), token, { state: 'completed', payload });
  }

  /** As `completeCallback()`, but `ctx.waitForCallback()` throws `error` (as `{ name, message }` it crosses the store). */
  failCallback(token: string, error: unknown): Promise<WorkflowCallbackCompletion> {
    return settleCallback(this.storage, this.callbackDeps(), token, { state: 'failed', error });
  }

  private callbackDeps() {
    return { now: () => this.options.clock.now(), signal: (signal: NewWorkflowSignal) => this.runtime.signal(signal) };
  }

  /** Instances matching the filters, ordered by `createdAt`, then `id`. */
  async list(options: WorkflowListOptions = {}): Promise<WorkflowInstance[]> {
    const rows = await this.storage.list(parseListRequest(options));
    return rows.map(stripLease);
  }

  /**
   * Deletes a finished instance and its journal. Throws for an unknown or unfinished one, and for a
   * child whose parent is unfinished: the parent may not have taken the child's end yet, and that
   * end is kept (from `purge()`) only through the child.
   */
  delete(id: string): Promise<void> {
    return deleteFinished(this.storage, id, () => this.getStatus(id));
  }

  /**
   * Deletes finished instances that ended before `olderThan` (a date, or a duration back from now)
   * and signals sent before it. `limit` bounds each kind; without it, it deletes in batches until
   * nothing is left. Unfinished instances are never deleted.
   */
  async purge(options: {
    olderThan: Duration | Date;
    statuses?: WorkflowStatus[];
    limit?: number;
  }): Promise<WorkflowPurgeResult> {
    return purgeInBatches(this.storage, parsePurgeRequest(options, this.options.clock.now()));
  }

  private async cancelMatching(
    method: string,
    filter: WorkflowBulkFilter,
    options: WorkflowBulkOptions,
    terminate: boolean,
  ): Promise<WorkflowBulkResult> {
    const selection: BulkSelection = parseBulkFilter(method, filter, this.options.clock.now());
    checkBulkOptions(method, options, true);
    return actOnMatching(
      this.bulkReads(),
      selection,
      inStorePages(
        (instance) => !FINISHED_STATUSES.includes(instance.status),
        (ids) =>
          this.runtime.changeMany(
            ids,
            { kind: 'cancel', request: parseCancelRequest(options.reason, terminate, this.options.clock.now()) },
            options.transaction,
          ),
      ),
    );
  }

  private bulkReads(): BulkReads {
    return {
      list: (query) => this.storage.list(query),
      get: (id) => this.storage.get(id, { readable: true }),
      now: () => this.options.clock.now(),
    };
  }

  private async requestCancel(id: string, reason: string | undefined, terminate: boolean): Promise<void> {
    const request = parseCancelRequest(reason, terminate, this.options.clock.now());
    if (await this.runtime.requestCancel(id, request)) return;
    throw cancelRefused(await this.getStatus(id), terminate);
  }

  private result<O>(id: string, timeout: Duration | undefined): Promise<O> {
    const limit = timeout === undefined ? null : parseDuration(timeout, 'result() option "timeout"');
    return waitForResult<O>(
      {
        read: (instanceId) => this.getStatus(instanceId),
        events: this.events,
        listenForEnds: (listener, instanceId) => this.storage.listenForEnds(listener, instanceId),
        requestEndNotice: (instanceId) => this.storage.requestEndNotice(instanceId, this.options.clock.now()),
        whileRunningHere: (instanceId) => this.runtime.whileRunningHere(instanceId),
        closing: this.closing.signal,
        pollInterval: this.options.worker.pollInterval,
      },
      id,
      limit,
    );
  }

  private async allChildren(id: string): Promise<WorkflowInstance[]> {
    const children: WorkflowInstance[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await this.storage.list({ parentId: id, limit: 1000, offset });
      children.push(...page.map(stripLease));
      if (page.length < 1000) return children;
    }
  }
}

/** The statuses `retry()` takes. */
const RETRYABLE: readonly WorkflowStatus[] = ['failed', 'cancelled', 'compensation_failed'];

/** Instances as the client shows them: the lease token is the workers' secret. */
function stripLease<T extends WorkflowInstance>(instance: T): T {
  return { ...instance, leaseToken: null };
}
