import { serializeError } from '../errors/serialize-error.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type {
  NewWorkflowInstance,
  WorkflowConcurrencyLimit,
  WorkflowRateLimitRule,
} from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { createChild, type ResolvedChildWorkflow } from './child-support.js';
import { leaseMargin, type ClaimedInstance } from './claimed-instance.js';
import { ExecutionConclusion } from './execution-conclusion.js';
import { emitExecutionEvent } from './execution-events.js';
import { looksLikeStoreError } from './execution-reports.js';
import { InstanceClaims } from './instance-claims.js';
import type { JournalLimits } from './journal-limits.js';
import type { RetryPolicy } from './retry-policy.js';
import { readAtStart } from './unstarted-claims.js';
import type { WorkflowDefinition, WorkflowReference } from './workflow-context.js';
import { terminated } from './end-errors.js';
import { WorkflowExecution } from './workflow-execution.js';
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
 * Claims, executes and concludes instances: its claims (`claims`: leases, renewals, cancel
 * notices, shutdown's abandons) feed `execute()`, which replays `run()` and hands the outcome to
 * its conclusion (`ExecutionConclusion`: suspended, compensated, finished, children closed, a
 * parent told its child ended). Framework-free; `WorkflowRuntime` drives it from the leased loop.
 */
export class WorkflowEngine {
  /** The instances this process leases: claims, renewals, cancel notices, abandons. */
  readonly claims: InstanceClaims;
  private readonly conclusion: ExecutionConclusion;
  private readonly observer: WorkflowObserver;

  constructor(private readonly options: EngineOptions) {
    this.observer = options.observer ?? NO_OBSERVER;
    this.claims = new InstanceClaims(options, this.observer);
    this.conclusion = new ExecutionConclusion(options, this.observer, (id, terminate) =>
      this.claims.cancelAccepted(id, terminate),
    );
  }

  async execute(claimed: ClaimedInstance, shutdown: AbortSignal): Promise<void> {
    let { instance } = claimed;
    const { signalCursor } = claimed;
    const { registry, storage, clock, logger } = this.options;
    const { conclusion } = this;
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
      this.claims.executionStarted(claimed, exec, shutdown);
      exec.shutdown = shutdown;
      if (shutdown.aborted) exec.interrupt('shutdown');
      // Paused since the claim (read at the start): handed back before any step runs.
      else if (start.paused && !replayOnly) exec.interrupt('pause');
      try {
        if (instance.terminateRequested)
          return await conclusion.finish(exec, 'cancelled', { error: terminated(instance.cancelReason) });
        this.emit(
          exec,
          instance.runs === 1 ? { type: 'workflow-started' } : { type: 'workflow-resumed', run: instance.runs },
        );
        const outcome = await exec.run(() => definition.instance.run(exec!.context, instance.input));
        if (!claimed.released) await conclusion.conclude(exec, outcome, timedOut);
      } finally {
        exec.shutdown = null;
      }
    } catch (error) {
      observed.outcome(error instanceof WorkflowPayloadError ? 'handed-back' : 'error', serializeError(error));
      if (error instanceof WorkflowPayloadError) await conclusion.handBackUnreadable(instance, signalCursor, error);
      else if (exec === undefined && definition)
        conclusion.storeFailed(error, `reading the journal of "${instance.id}"`);
      // Concluding reads and writes the store (children, the cancel reason): its outages are logged once.
      else if (looksLikeStoreError(error)) conclusion.storeFailed(error, `concluding "${instance.id}"`);
      else
        logger.error(
          `Executing "${instance.id}" (${instance.workflow}@${instance.version}) failed; it runs again when its lease expires.`,
          error,
        );
    } finally {
      observed.close();
      exec?.close();
      this.claims.executionEnded(claimed, exec);
    }
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

  private emit(source: { instance: WorkflowInstance; observe: ExecutionObserver }, body: WorkflowEventBody): void {
    emitExecutionEvent(this.options, source, body);
  }
}
