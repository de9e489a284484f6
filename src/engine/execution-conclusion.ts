import { serializeError } from '../errors/serialize-error.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';
import { CHILD_ENDED_SIGNAL, closeChildren, type ChildEnded } from './child-support.js';
import { cancelled, endOfCompensations, terminated, timedOutError, UNKNOWN_FAILURE } from './end-errors.js';
import { emitExecutionEvent, type ExecutionEventOptions } from './execution-events.js';
import type { ExecutionOutcome } from './execution-outcome.js';
import { reportFailure, reportLostLease, reportStoreError } from './execution-reports.js';
import { toJsonValue } from './json-value.js';
import type { WorkflowExecution } from './workflow-execution.js';
import type { WorkflowObserver } from './workflow-observer.js';

/** What the conclusion needs of the engine's options. */
export interface ExecutionConclusionOptions extends ExecutionEventOptions {
  storage: WorkflowStorage;
  logger: { warn(message: string): void; error(message: string, error?: unknown): void };
  onStoreError?(error: unknown, during: string): void;
  /** Log each instance that ends `failed` or `compensation_failed` at warn. Default true. */
  logFailures?: boolean;
  /** Look for due work now (a parent was told its child ended). */
  kick(): void;
}

/**
 * How an execution ends, from its outcome: suspended with its wake-up and waits, compensated,
 * finished (its children closed first, and its parent told in the same write), handed back, or
 * given up when the store failed or the lease is gone. Every end is a write under the lease.
 */
export class ExecutionConclusion {
  constructor(
    private readonly options: ExecutionConclusionOptions,
    private readonly observer: WorkflowObserver,
    /** A cancel or terminate of a child was accepted: its execution here stops now. */
    private readonly childCancelAccepted: (id: string, terminate: boolean) => void,
  ) {}

  async conclude(exec: WorkflowExecution, outcome: ExecutionOutcome, timedOut: boolean): Promise<void> {
    const { instance } = exec;
    const { run, interrupt: reason } = outcome;
    if (reason === 'lease-lost') return this.leaseLost(exec);
    if (reason === 'store-error') {
      if (outcome.storeError instanceof WorkflowPayloadError)
        return this.handBackUnreadable(instance, exec.signalCursor, outcome.storeError);
      this.storeFailed(outcome.storeError, `executing "${instance.id}"`);
      return;
    }
    if (reason === 'pause' && run.kind !== 'completed' && run.kind !== 'suspended') {
      // Paused by an operator: handed back due now, and claimed again once resumed. A run that
      // completed or suspended meanwhile ends or suspends as it would have.
      exec.observe.outcome('handed-back');
      await exec.write({ release: { wakeAt: this.options.clock.now(), waits: [], signalCursor: exec.signalCursor } });
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
  async finish(
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

  /** A payload no configured codec can read (a key removed too early): hand it back for later, never fail it. */
  async handBackUnreadable(
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

  /** The store failed while `during`: reported once per outage, never as a lost lease. */
  storeFailed(error: unknown, during: string): void {
    reportStoreError(this.options, error, during);
  }

  /** Applies `parentClose` to the unfinished children. At least once: a repeated request changes nothing. */
  private async closeChildren(exec: WorkflowExecution, reason: string): Promise<void> {
    // A child whose creation is still under way (terminate doesn't wait for it) must be listed too.
    await exec.childCreationsSettled();
    if (!exec.hasChildren()) return;
    await closeChildren(this.options, exec.instance.id, reason, this.childCancelAccepted);
  }

  /** The ending request's reason: the copy's if it has that request, else the store's (a terminate after a cancel replaces it). */
  private async cancelReason(exec: WorkflowExecution, terminate = false): Promise<string | null> {
    if (terminate ? exec.instance.terminateRequested : exec.instance.cancelRequested) return exec.instance.cancelReason;
    return (await this.options.storage.get(exec.instance.id))?.cancelReason ?? null;
  }

  /** A write under the lease did not land: the store failed, or the lease is gone. */
  private async writeRefused(exec: WorkflowExecution): Promise<void> {
    if (exec.storeFailure !== null) this.storeFailed(exec.storeFailure, `executing "${exec.instance.id}"`);
    else await this.leaseLost(exec);
  }

  private leaseLost({ instance, observe }: WorkflowExecution): Promise<void> {
    observe.outcome('lease-lost');
    this.observer.leaseLost(instance);
    return reportLostLease(this.options, instance);
  }

  private emit(exec: WorkflowExecution, body: WorkflowEventBody): void {
    emitExecutionEvent(this.options, exec, body);
  }
}
