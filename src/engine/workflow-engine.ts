import { serializeError } from '../errors/serialize-error.js';
import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowLease } from '../storage/workflow-lease.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type {
  NewWorkflowInstance,
  WorkflowConcurrencyLimit,
  WorkflowRateLimitRule,
  WorkflowWrite,
} from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import {
  CHILD_ENDED_SIGNAL,
  closeChildren,
  createChild,
  type ChildEnded,
  type ResolvedChildWorkflow,
} from './child-support.js';
import type { JournalLimits } from './journal-limits.js';
import { toJsonValue } from './json-value.js';
import type { RetryPolicy } from './retry-policy.js';
import type { WorkflowDefinition, WorkflowReference } from './workflow-context.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import { abandonClaimed, leaseMargin, type ClaimedInstance } from './claimed-instance.js';
import { looksLikeStoreError, reportFailure, reportLostLease, reportStoreError } from './execution-reports.js';
import { WorkflowExecution } from './workflow-execution.js';
import { LocalExecutions } from './local-executions.js';
import { readAtStart, UnstartedClaims } from './unstarted-claims.js';
import { cancelled, endOfCompensations, terminated, timedOutError, UNKNOWN_FAILURE } from './end-errors.js';
import { NO_OBSERVER, type ExecutionObserver, type WorkflowObserver } from './workflow-observer.js';

/** A workflow version this process can run. */
export interface RunnableWorkflow {
  name: string;
  version: number;
  /** The provider instance: its `run()` is called. */
  instance: WorkflowDefinition<unknown, unknown>;
  /** Its steps' default retry. */
  retry: RetryPolicy;
}

/** What the engine needs to know about the workflows of this process. */
export interface EngineRegistry {
  get(name: string, version: number): RunnableWorkflow | undefined;
  versions(): Array<{ name: string; version: number }>;
  limits(): WorkflowConcurrencyLimit[];
  rateLimits(): WorkflowRateLimitRule[];
  resolveChild(workflow: WorkflowReference, version?: number): ResolvedChildWorkflow;
}

export interface EngineLogger {
  warn(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface EngineOptions {
  /** The storage layer: the engine's only way to the store. */
  storage: WorkflowStorage;
  registry: EngineRegistry;
  clock: WorkflowClock;
  journalLimits: JournalLimits;
  logger: EngineLogger;
  /**
   * Told when the store failed (threw, as when the database can't be reached) while `during`:
   * reported once per outage by the caller, never as a lost lease. Default: logged as an error.
   */
  onStoreError?(error: unknown, during: string): void;
  /** Log each instance that ends `failed` or `compensation_failed` at warn. Default true. */
  logFailures?: boolean;
  emit(event: WorkflowEventBody & { id: string; workflow: string; version: number; at: number }): void;
  /** Whether anything listens to `emit()` now; when it says no, no event is built. Default: always. */
  observed?(): boolean;
  /** Look for due work now (a child was started, a cancel was accepted). */
  kick(): void;
  /** Telemetry (spans, metrics). Default: nothing is observed. */
  observer?: WorkflowObserver;
}

/**
 * Claims, executes and concludes instances: replays `run()`, then records the outcome under the
 * lease (completed, failed, suspended, compensating, cancelled), closes children and tells a
 * parent its child ended. Framework-free; `WorkflowWorker` drives it from the leased loop.
 */
export class WorkflowEngine {
  private readonly running = new LocalExecutions();
  private readonly unstarted = new UnstartedClaims();
  private readonly observer: WorkflowObserver;

  constructor(private readonly options: EngineOptions) {
    this.observer = options.observer ?? NO_OBSERVER;
  }

  /**
   * Leases up to `limit` due instances of the workflows this process runs, granted at `now`; with
   * `ids` (named by a notification), the store may take just those (see `WorkflowClaimRequest.ids`).
   */
  claim(lease: WorkflowLease, now: number, limit: number, ids?: string[]): Promise<ClaimedInstance[]> {
    const workflows = this.options.registry.versions();
    return workflows.length === 0
      ? Promise.resolve([])
      : this.unstarted.claim(() => this.claimNow(workflows, lease, now, limit, ids));
  }

  private async claimNow(
    workflows: Array<{ name: string; version: number }>,
    lease: WorkflowLease,
    now: number,
    limit: number,
    ids?: string[],
  ): Promise<ClaimedInstance[]> {
    const { registry, storage } = this.options;
    const { instances, lastSignalId } = await storage.claim({
      ...lease,
      now,
      limit,
      workflows,
      limits: registry.limits(),
      rateLimits: registry.rateLimits(),
      ...(ids === undefined ? {} : { ids }),
    });
    this.observer.claimed(instances, now);
    return instances.map((instance) => ({
      // The store returns each instance with the new lease on it: copied only if it doesn't say so.
      instance: instance.leaseToken === lease.token ? instance : { ...instance, leaseToken: lease.token },
      signalCursor: lastSignalId,
      leaseUntil: lease.leaseUntil,
    }));
  }

  /** Extends the lease; hands the execution any cancel or terminate it reads. `false`: the lease is gone. */
  async renew(claimed: ClaimedInstance, until: number): Promise<boolean> {
    const flags = await this.options.storage.renew(claimed.instance.id, claimed.instance.leaseToken!, until);
    if (flags !== null && !claimed.released) claimed.leaseUntil = until;
    const exec = claimed.exec;
    if (!exec) {
      this.unstarted.renewed(claimed, flags);
      return flags !== null;
    }
    if (flags === null) exec.interrupt('lease-lost');
    else if (flags.terminateRequested) exec.interrupt('terminate');
    else if (flags.cancelRequested && !exec.replayOnly) exec.interrupt('cancel');
    else if (
      !exec.replayOnly &&
      claimed.instance.deadline !== null &&
      this.options.clock.now() >= claimed.instance.deadline
    ) {
      // The run deadline passed while something runs (a long step): like a cancel, the step sees
      // ctx.signal, and the instance compensates and fails with WorkflowTimeoutError.
      exec.interrupt('timeout');
    }
    return flags !== null;
  }

  /** Shutdown stopped waiting for `claimed` (see `abandonClaimed()`): its code may still run, but another process may now end it. */
  abandon(claimed: ClaimedInstance): Promise<void> {
    this.running.release(claimed.instance.id);
    return abandonClaimed(this.options, claimed);
  }

  /** While an execution of `id` runs here under its lease: resolves once it stops standing for it (`LocalExecutions.whileRunning()`). */
  whileRunningHere(id: string): Promise<void> | null {
    return this.running.whileRunning(id);
  }

  /** A cancel or terminate accepted in this process: an execution running here stops at once. */
  noticeCancel(id: string, terminate: boolean): void {
    const exec = this.running.get(id);
    if (exec && (terminate || !exec.replayOnly)) exec.interrupt(terminate ? 'terminate' : 'cancel');
    this.unstarted.notice(id);
    this.options.kick();
  }

  /** The store said a cancel or terminate of `id` was stored: a claim still out reads the flags again at its start (`UnstartedClaims.heardOf()`). */
  heardOfCancel(id: string): void {
    this.unstarted.heardOf(id);
  }

  /** The store said a cancel or terminate of some instance was stored, not which: the claims still out read the flags again at their start (`UnstartedClaims.heardOfSome()`). */
  heardOfSomeCancel(): void {
    this.unstarted.heardOfSome();
  }

  async execute(claimed: ClaimedInstance, shutdown: AbortSignal): Promise<void> {
    let { instance } = claimed;
    const { signalCursor } = claimed;
    const { registry, storage, clock, logger } = this.options;
    const definition = registry.get(instance.workflow, instance.version);
    let exec: WorkflowExecution | undefined;
    const observed = this.observer.execution(instance);
    try {
      if (!definition)
        throw new Error(
          `Claimed "${instance.id}" of ${instance.workflow}@${instance.version}, which this process does not run.`,
        );
      // The journal (a rerun's), and the cancel flags as they stand now: a request since the claim stops it before its first step.
      const start = await readAtStart(storage, claimed);
      if (!start) return; // deleted since the claim
      claimed.instance = instance = start.instance;
      const timedOut = instance.deadline !== null && clock.now() >= instance.deadline;
      const replayOnly = instance.status === 'compensating' || instance.cancelRequested || timedOut;
      exec = new WorkflowExecution(
        instance,
        start.journal,
        signalCursor,
        this.executionDeps(instance, definition.retry, claimed, observed),
        replayOnly,
      );
      claimed.exec = exec;
      // From here a notice reaches the execution itself (in the same turn as the read's answer: none falls between).
      this.running.add(exec);
      this.unstarted.started(claimed);
      this.running.hearShutdown(shutdown);
      exec.shutdown = shutdown;
      if (shutdown.aborted) exec.interrupt('shutdown');
      try {
        if (instance.terminateRequested)
          return await this.finish(exec, 'cancelled', { error: terminated(instance.cancelReason) });
        this.emit(
          exec,
          instance.runs === 1 ? { type: 'workflow-started' } : { type: 'workflow-resumed', run: instance.runs },
        );
        const outcome = await exec.run(() => definition.instance.run(exec!.context, instance.input));
        if (!claimed.released) await this.conclude(exec, outcome, timedOut);
      } finally {
        exec.shutdown = null;
      }
    } catch (error) {
      observed.outcome(error instanceof WorkflowPayloadError ? 'handed-back' : 'error', serializeError(error));
      if (error instanceof WorkflowPayloadError) await this.handBackUnreadable(instance, signalCursor, error);
      else if (exec === undefined && definition) this.storeFailed(error, `reading the journal of "${instance.id}"`);
      // Concluding reads and writes the store (children, the cancel reason): its outages are logged once.
      else if (looksLikeStoreError(error)) this.storeFailed(error, `concluding "${instance.id}"`);
      else
        logger.error(
          `Executing "${instance.id}" (${instance.workflow}@${instance.version}) failed; it runs again when its lease expires.`,
          error,
        );
    } finally {
      this.unstarted.started(claimed);
      observed.close();
      exec?.close();
      if (exec) this.running.delete(exec);
    }
  }

  private async conclude(exec: WorkflowExecution, outcome: ExecutionOutcome, timedOut: boolean): Promise<void> {
    const { instance } = exec;
    const { run, interrupt: reason } = outcome;
    if (reason === 'lease-lost') return this.leaseLost(exec);
    if (reason === 'store-error') {
      if (outcome.storeError instanceof WorkflowPayloadError)
        return this.handBackUnreadable(instance, exec.signalCursor, outcome.storeError);
      this.storeFailed(outcome.storeError, `executing "${instance.id}"`);
      return;
    }
    if (reason === 'shutdown' && run.kind !== 'completed') {
      // Handed back due now, for another worker (or this one after a restart) to carry on.
      exec.observe.outcome('handed-back');
      await exec.write({ release: { wakeAt: this.options.clock.now(), waits: [], signalCursor: exec.signalCursor } });
      return;
    }
    if (outcome.fatal) return this.finish(exec, 'failed', { error: serializeError(outcome.fatal) });
    if (instance.status === 'compensating')
      return this.compensate(exec, instance.error ?? UNKNOWN_FAILURE, true, endOfCompensations(instance));
    if (outcome.terminateRequested)
      return this.finish(exec, 'cancelled', { error: terminated(await this.cancelReason(exec, true)) });
    if (outcome.cancelRequested)
      return this.compensate(exec, cancelled(await this.cancelReason(exec)), false, 'cancelled');
    if (timedOut || reason === 'timeout') return this.compensate(exec, timedOutError(instance), false);
    if (reason === 'journal-limit' && outcome.journalLimitError)
      return this.compensate(exec, serializeError(outcome.journalLimitError), false);
    switch (run.kind) {
      case 'suspended':
        return this.suspend(exec);
      case 'completed': {
        const missing = exec.unvisited();
        if (missing.length > 0) {
          const error = new WorkflowNonDeterminismError(
            `Instance "${instance.id}" of workflow "${instance.workflow}@${instance.version}" does not match its journal: ` +
              `${missing.map((n) => `"${n}"`).join(', ')} ${missing.length === 1 ? 'was' : 'were'} recorded by an earlier run but never reached. ` +
              'Ship changes that remove or rename steps as a new workflow version.',
          );
          return this.finish(exec, 'failed', { error: serializeError(error) });
        }
        let output: unknown;
        try {
          output = toJsonValue(run.value, `The output of workflow "${instance.workflow}"`, 'output') ?? null;
          await this.options.storage.prepareOutput(
            output,
            `The output of workflow "${instance.workflow}" (instance "${instance.id}")`,
          );
        } catch (error) {
          return this.compensate(exec, serializeError(error), false);
        }
        return this.finish(exec, 'completed', { output });
      }
      case 'failed':
        return this.compensate(exec, serializeError(run.error), false);
      case 'interrupted':
        // An interrupt nobody asked for (the workflow threw one itself): treat it as a failure.
        return this.compensate(exec, { name: 'Error', message: `Execution interrupted (${run.reason}).` }, false);
    }
  }

  private async suspend(exec: WorkflowExecution): Promise<void> {
    const { instance } = exec;
    const suspension = exec.suspension();
    const deadline = instance.deadline;
    // Never parked past the run deadline, so a sleep or a wait can't outlive the run timeout.
    const wakeAt = deadline === null ? suspension.wakeAt : Math.min(suspension.wakeAt ?? deadline, deadline);
    const ok = await exec.write({
      status: 'suspended',
      release: { wakeAt, waits: suspension.waits, signalCursor: exec.signalCursor },
    });
    if (ok) this.emit(exec, { type: 'workflow-suspended', wakeAt, waits: suspension.waits });
    else await this.writeRefused(exec);
  }

  /**
   * Runs the compensations for `reason`, then ends the instance `ends`: `cancelled` only for its own
   * cancel, as the caller knows it (never from `reason`'s name, which a workflow's own error may share).
   */
  private async compensate(
    exec: WorkflowExecution,
    reason: SerializedWorkflowError,
    alreadyCompensating: boolean,
    ends: 'cancelled' | 'failed' = 'failed',
  ): Promise<void> {
    const { instance } = exec;
    if (!alreadyCompensating && !exec.needsCompensation()) {
      return this.finish(exec, ends, { error: reason });
    }
    if (!alreadyCompensating) {
      if (!(await exec.write({ status: 'compensating', error: reason }))) return this.writeRefused(exec);
      this.emit(exec, { type: 'workflow-compensating', error: reason });
    }
    // Every execution that compensates closes the children again: a crash can't leave one running.
    await this.closeChildren(exec, `its parent "${instance.id}" is compensating (${reason.name}: ${reason.message})`);
    const result = await exec.compensate();
    switch (result.state) {
      case 'done':
        return this.finish(exec, ends, { error: reason });
      case 'failed':
        return this.finish(exec, 'compensation_failed', { error: { ...reason, compensation: result.error } });
      case 'suspended': {
        const ok = await exec.write({
          status: 'compensating',
          release: { wakeAt: result.wakeAt, waits: [], signalCursor: exec.signalCursor },
        });
        if (ok) this.emit(exec, { type: 'workflow-suspended', wakeAt: result.wakeAt, waits: [] });
        return;
      }
      case 'interrupted':
        if (result.reason === 'terminate')
          return this.finish(exec, 'cancelled', { error: terminated(await this.cancelReason(exec, true)) });
        if (result.reason === 'lease-lost' || result.reason === 'store-error') return this.writeRefused(exec);
        if (result.reason === 'shutdown') {
          await exec.write({
            release: { wakeAt: this.options.clock.now(), waits: [], signalCursor: exec.signalCursor },
          });
        }
        return;
    }
  }

  /**
   * Ends the instance. Children are closed first, so a crash in between closes them again on the
   * next execution; a child's end reaches its parent as a signal in the same write.
   */
  private async finish(
    exec: WorkflowExecution,
    status: WorkflowStatus,
    result: { output?: unknown; error?: SerializedWorkflowError },
  ): Promise<void> {
    const { instance } = exec;
    await this.closeChildren(exec, `its parent "${instance.id}" ended as ${status}`);
    const now = this.options.clock.now();
    const error = result.error ?? null;
    const write: Omit<WorkflowWrite, 'now' | 'entries'> = {
      status,
      error,
      release: { wakeAt: null, waits: [], signalCursor: exec.signalCursor },
    };
    if (status === 'completed') write.output = result.output ?? null;
    if (instance.parentId !== null) {
      const payload: ChildEnded = { status, output: status === 'completed' ? (result.output ?? null) : null, error };
      write.signal = { name: CHILD_ENDED_SIGNAL, key: instance.id, dedupeId: instance.id, payload, now };
    }
    if (!(await exec.write(write))) return this.writeRefused(exec);
    if (instance.parentId !== null) this.options.kick();
    if ((status === 'failed' || status === 'compensation_failed') && this.options.logFailures !== false)
      reportFailure(this.options.logger, instance, status, error!);
    if (status === 'completed') this.emit(exec, { type: 'workflow-completed', output: write.output });
    else if (status === 'cancelled') this.emit(exec, { type: 'workflow-cancelled', error: error! });
    else if (status === 'failed') this.emit(exec, { type: 'workflow-failed', error: error! });
    else this.emit(exec, { type: 'workflow-compensation-failed', error: error! });
  }

  /** Applies `parentClose` to the unfinished children. At least once: a repeated request changes nothing. */
  private async closeChildren(exec: WorkflowExecution, reason: string): Promise<void> {
    // A child whose creation is still under way (terminate doesn't wait for it) must be listed too.
    await exec.childCreationsSettled();
    if (!exec.hasChildren()) return;
    await closeChildren(this.options, exec.instance.id, reason, (id, terminate) => this.noticeCancel(id, terminate));
  }

  /** The ending request's reason: the copy's if it has that request, else the store's (a terminate after a cancel replaces it). */
  private async cancelReason(exec: WorkflowExecution, terminate = false): Promise<string | null> {
    if (terminate ? exec.instance.terminateRequested : exec.instance.cancelRequested) return exec.instance.cancelReason;
    return (await this.options.storage.get(exec.instance.id))?.cancelReason ?? null;
  }

  private executionDeps(
    instance: WorkflowInstance,
    retry: RetryPolicy,
    claimed: ClaimedInstance,
    observe: ExecutionObserver,
  ) {
    const { storage, clock, journalLimits, logger, registry } = this.options;
    const margin = claimed.leaseUntil === undefined ? 0 : leaseMargin(claimed.leaseUntil, clock.now());
    const source = { instance, observe };
    return {
      leaseExpired: () => claimed.leaseUntil !== undefined && clock.now() + margin >= claimed.leaseUntil,
      storage,
      clock,
      journalLimits,
      retry,
      emit: (body: WorkflowEventBody) => this.emit(source, body),
      warn: (message: string) => logger.warn(message),
      resolveChild: registry.resolveChild.bind(registry),
      // Inside the child's start (its span, with telemetry): the child's executions join that trace.
      createChild: (child: NewWorkflowInstance) =>
        createChild(this.options, { ...child, traceContext: this.observer.startContext(child.workflow, child.id) }),
      observe,
      ending: claimed.ending,
    };
  }

  /** A payload no configured codec can read (a key removed too early): hand it back for later, never fail it. */
  private async handBackUnreadable(
    instance: WorkflowInstance,
    signalCursor: number,
    error: WorkflowPayloadError,
  ): Promise<void> {
    try {
      await this.options.storage.handBackUnreadable(
        instance,
        instance.leaseToken!,
        signalCursor,
        error,
        this.options.clock.now(),
      );
    } catch (failure) {
      this.options.logger.error(`Handing back "${instance.id}" failed; it runs again when its lease expires.`, failure);
    }
  }

  /** A write under the lease did not land: the store failed, or the lease is gone. */
  private async writeRefused(exec: WorkflowExecution): Promise<void> {
    if (exec.storeFailure !== null) this.storeFailed(exec.storeFailure, `executing "${exec.instance.id}"`);
    else await this.leaseLost(exec);
  }

  private storeFailed(error: unknown, during: string): void {
    reportStoreError(this.options, error, during);
  }

  private leaseLost({ instance, observe }: WorkflowExecution): Promise<void> {
    observe.outcome('lease-lost');
    this.observer.leaseLost(instance);
    return reportLostLease(this.options, instance);
  }

  /** An event of `exec`: its telemetry hears it, and the application's listeners (when any listen). */
  private emit({ instance, observe }: Pick<WorkflowExecution, 'instance' | 'observe'>, body: WorkflowEventBody): void {
    observe.event(body);
    if (this.options.observed?.() === false) return;
    // `Object.assign` copies the bodies' several shapes faster than a spread does.
    const where = {
      id: instance.id,
      workflow: instance.workflow,
      version: instance.version,
      at: this.options.clock.now(),
    };
    this.options.emit(Object.assign({}, body, where) as never);
  }
}
