import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInstance, WorkflowStatus } from '../storage/workflow-instance.js';

/** What an execution does that telemetry wraps: one attempt of a step or a compensation, or a child's start. */
export type ObservedOperation = 'step' | 'compensation' | 'child';

/** How an execution ended: the status it wrote, or why it wrote none. */
export type ObservedOutcome = WorkflowStatus | 'lease-lost' | 'handed-back' | 'error';

/** The hooks of one execution of an instance (see `WorkflowObserver.execution()`). */
export interface ExecutionObserver {
  /**
   * Runs `fn` (one attempt of a step or a compensation, or a child's creation) as the operation
   * `kind` `name`; what `fn` starts belongs to it (OpenTelemetry: it runs in the operation's span).
   * Resolves to what `fn` resolves to, rejects with what it throws.
   */
  around<T>(kind: ObservedOperation, name: string, attempt: number, fn: () => Promise<T>): Promise<T>;
  /** A wait took signal `signal`, `latency` ms after it was sent. */
  signalTaken(signal: string, latency: number): void;
  /** An event the engine emits for this instance (a suspension, the end...): what the execution wrote. */
  event(event: WorkflowEventBody): void;
  /** How the execution ended when it wrote no end of its own (a lost lease, a hand-back, a failure); the last call wins. */
  outcome(outcome: ObservedOutcome, error?: SerializedWorkflowError | null): void;
  /** The execution is over (called once, whatever happened). */
  close(): void;
}

/**
 * What the engine, the worker and the client tell telemetry as they work. Framework-free: the
 * telemetry layer implements it with OpenTelemetry when `@opentelemetry/api` is installed; the
 * default observes nothing.
 */
export interface WorkflowObserver {
  /**
   * An instance of `workflow` with id `id` is being created (by `start()`, or as a child inside an
   * execution): the trace context to store with it, so its executions join the creator's trace; or
   * `null`.
   */
  startContext(workflow: string, id: string): Record<string, string> | null;
  /** A claim leased `instances` (each due since its `wakeAt`) at `now`. */
  claimed(instances: readonly WorkflowInstance[], now: number): void;
  /** This process lost the lease on `instance` (another worker claimed it): nothing it did after was recorded. */
  leaseLost(instance: WorkflowInstance): void;
  /** An execution of `instance` begins. */
  execution(instance: WorkflowInstance): ExecutionObserver;
  /**
   * Optional: an operator's call is made on instance `id` (`pause()`, `resume()`) or on workflow
   * `workflow` (`pauseWorkflow()`, `resumeWorkflow()`), for a span of its own.
   */
  operatorAction?(action: WorkflowOperatorAction, id: string | null, workflow?: string): void;
}

/** The operators' calls `WorkflowObserver.operatorAction()` hears of. */
export type WorkflowOperatorAction = 'pause' | 'resume' | 'pause-workflow' | 'resume-workflow';

const NO_EXECUTION: ExecutionObserver = {
  around: (_kind, _name, _attempt, fn) => fn(),
  signalTaken: () => undefined,
  event: () => undefined,
  outcome: () => undefined,
  close: () => undefined,
};

/** Observes nothing. */
export const NO_OBSERVER: WorkflowObserver = {
  startContext: () => null,
  claimed: () => undefined,
  leaseLost: () => undefined,
  execution: () => NO_EXECUTION,
};
