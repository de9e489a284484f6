import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { Attributes, Context, Counter, Histogram, Span, Tracer } from '@opentelemetry/api';
import type {
  ExecutionObserver,
  ObservedOperation,
  ObservedOutcome,
  WorkflowObserver,
  WorkflowOperatorAction,
} from '../engine/workflow-observer.js';
import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowEventType } from '../events/workflow-event.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';

/** The `@opentelemetry/api` module, as loaded at startup (it is an optional peer). */
export type OpenTelemetryApiModule = typeof OpenTelemetryApi;

/** The tracer's and the meter's name. */
export const INSTRUMENTATION_NAME = '@nestjs/workflows';

export interface OpenTelemetryObserverOptions {
  /** Due instances not yet claimed (at most a cap), or `null` when the store can't count them. */
  dueBacklog(): Promise<number | null>;
  /**
   * Whether error statuses and exceptions carry the error's message and stack. `false` when a
   * codec encrypts them at rest (they may carry data: an order id, a cancel reason): the spans then
   * carry the error's name only, so no tracing backend receives in clear what the store keeps
   * encrypted.
   */
  errorMessages: boolean;
}

/** What an execution wrote, by the event the engine emits for it. */
const OUTCOMES: Partial<Record<WorkflowEventType, ObservedOutcome>> = {
  'workflow-suspended': 'suspended',
  'workflow-compensating': 'compensating',
  'workflow-completed': 'completed',
  'workflow-failed': 'failed',
  'workflow-cancelled': 'cancelled',
  'workflow-compensation-failed': 'compensation_failed',
};

/**
 * At most this many step names per workflow are values of `workflow.step.name` on the step
 * duration, in one process; the names a workflow reaches after them report as `STEP_NAME_OTHER`.
 * Step names are often built from ids (`email-${user.id}` in a loop): each would otherwise make
 * series of its own, without bound, in the metrics backend.
 */
export const STEP_NAMES_PER_WORKFLOW = 100;

/** The step name reported past `STEP_NAMES_PER_WORKFLOW` (names starting with `$` are the engine's: no step has it). */
export const STEP_NAME_OTHER = '$other';

const SPAN_KIND_PRODUCER = 3;
const SPAN_KIND_CONSUMER = 4;
const STATUS_ERROR = 2;

/**
 * Spans and metrics through the OpenTelemetry API (whatever SDK the application registered; with
 * none, the API's no-ops).
 *
 * Traces: `start()` (and a parent starting a child) opens a short `workflow.start <name>` span and
 * stores its context with the new instance; every execution of the instance, in any process and
 * after any suspension, is a `workflow.execute <name>` span under it, so one instance is one trace
 * (and joins the trace of whoever started it). Inside an execution, each attempt of a step or a
 * compensation and each child start is a span of its own, active while the code runs, so the
 * spans your step makes nest under it. Every span carries `workflow.instance.id`. An operator's
 * `pause()`, `resume()`, `pauseWorkflow()` and `resumeWorkflow()` are short spans of their own
 * (`workflow.pause`, `workflow.resume`, `workflow.pause-workflow <name>`, `workflow.resume-workflow <name>`).
 *
 * Metrics: instances started / completed / failed / cancelled (by `workflow.name`), operators'
 * pauses and resumes (`workflows.operator.actions`, by `workflow.action`), step duration,
 * claim latency (from due to claimed), due backlog, lease losses, signal delivery latency.
 */
export class OpenTelemetryObserver implements WorkflowObserver {
  private readonly tracer: Tracer;
  private readonly counters: Record<
    'started' | 'completed' | 'failed' | 'cancelled' | 'leaseLosses' | 'operatorActions',
    Counter
  >;
  private readonly stepDuration: Histogram;
  private readonly claimLatency: Histogram;
  private readonly signalLatency: Histogram;
  /**
   * Whether step durations go anywhere: not when no meter provider was registered before this
   * observer was made, since the metrics API (unlike the tracing API) hands out no proxy, and its
   * no-op histogram stays one. Then a step attempt is not timed at all.
   */
  private readonly stepsMeasured: boolean;
  /** Per workflow, the step names reported as they are (at most `STEP_NAMES_PER_WORKFLOW`). */
  private readonly stepNames = new Map<string, Set<string>>();

  /** Whether spans carry errors' messages and stacks (see `OpenTelemetryObserverOptions.errorMessages`). */
  private readonly errorMessages: boolean;

  constructor(
    private readonly api: OpenTelemetryApiModule,
    options: OpenTelemetryObserverOptions,
  ) {
    this.errorMessages = options.errorMessages;
    this.tracer = api.trace.getTracer(INSTRUMENTATION_NAME);
    const meter = api.metrics.getMeter(INSTRUMENTATION_NAME);
    const counter = (name: string, description: string) =>
      meter.createCounter(name, { description, unit: '{instance}' });
    this.counters = {
      started: counter('workflows.instances.started', 'Instances whose first execution started.'),
      completed: counter('workflows.instances.completed', 'Instances that completed.'),
      failed: counter('workflows.instances.failed', 'Instances that failed (or whose compensations failed).'),
      cancelled: counter('workflows.instances.cancelled', 'Instances cancelled or terminated.'),
      operatorActions: meter.createCounter('workflows.operator.actions', {
        description: "Operators' pauses and resumes of instances and workflows.",
        unit: '{call}',
      }),
      leaseLosses: meter.createCounter('workflows.lease.losses', {
        description: 'Executions that lost their lease to another worker.',
        unit: '{execution}',
      }),
    };
    this.stepDuration = meter.createHistogram('workflows.step.duration', {
      description: 'One attempt of a step, from its start to its result or error.',
      unit: 'ms',
    });
    this.claimLatency = meter.createHistogram('workflows.claim.latency', {
      description: 'From when an instance became due to when a worker claimed it.',
      unit: 'ms',
    });
    this.stepsMeasured = this.stepDuration !== api.createNoopMeter().createHistogram('workflows.step.duration');
    this.signalLatency = meter.createHistogram('workflows.signal.delivery_latency', {
      description: 'From when a signal was sent to when a wait took it.',
      unit: 'ms',
    });
    meter
      .createObservableGauge('workflows.backlog.due', {
        description: 'Instances due now that no worker holds (counted up to 10,000).',
        unit: '{instance}',
      })
      .addCallback(async (result) => {
        const backlog = await options.dueBacklog().catch(() => null);
        if (backlog !== null) result.observe(backlog);
      });
  }

  /**
   * Counts instance starts and ends from the engine's events, as each execution's `event()` hears
   * them (not through a `WorkflowEvents` subscription, which would make the engine build every
   * event for every step even when the application listens to none).
   */
  private count(workflow: string, type: WorkflowEventType): void {
    const counter =
      type === 'workflow-started'
        ? this.counters.started
        : type === 'workflow-completed'
          ? this.counters.completed
          : type === 'workflow-failed' || type === 'workflow-compensation-failed'
            ? this.counters.failed
            : type === 'workflow-cancelled'
              ? this.counters.cancelled
              : null;
    counter?.add(1, { 'workflow.name': workflow });
  }

  operatorAction(action: WorkflowOperatorAction, id: string | null, workflow?: string): void {
    const attributes: Record<string, string> = { 'workflow.action': action };
    if (id !== null) attributes['workflow.instance.id'] = id;
    if (workflow !== undefined) attributes['workflow.name'] = workflow;
    this.tracer.startSpan(`workflow.${action}${workflow === undefined ? '' : ` ${workflow}`}`, { attributes }).end();
    this.counters.operatorActions.add(1, { 'workflow.action': action });
  }

  startContext(workflow: string, id: string): Record<string, string> | null {
    const { api } = this;
    const span = this.tracer.startSpan(`workflow.start ${workflow}`, {
      kind: SPAN_KIND_PRODUCER,
      attributes: { 'workflow.name': workflow, 'workflow.instance.id': id },
    });
    span.end();
    const carrier: Record<string, string> = {};
    api.propagation.inject(api.trace.setSpan(api.context.active(), span), carrier);
    return Object.keys(carrier).length > 0 ? carrier : null;
  }

  claimed(instances: readonly WorkflowInstance[], now: number): void {
    for (const instance of instances) {
      if (instance.wakeAt !== null)
        this.claimLatency.record(Math.max(0, now - instance.wakeAt), { 'workflow.name': instance.workflow });
    }
  }

  leaseLost(instance: WorkflowInstance): void {
    this.counters.leaseLosses.add(1, { 'workflow.name': instance.workflow });
  }

  execution(instance: WorkflowInstance): ExecutionObserver {
    const { api, tracer } = this;
    const parent: Context = instance.traceContext
      ? api.propagation.extract(api.ROOT_CONTEXT, instance.traceContext)
      : api.ROOT_CONTEXT;
    const base: Attributes = {
      'workflow.name': instance.workflow,
      'workflow.version': instance.version,
      'workflow.instance.id': instance.id,
    };
    const span = tracer.startSpan(
      `workflow.execute ${instance.workflow}`,
      { kind: SPAN_KIND_CONSUMER, attributes: { ...base, 'workflow.run': instance.runs } },
      parent,
    );
    // Nothing to trace into when no span of this execution records (no SDK, or one that sampled
    // this trace out) and no context manager would carry a context into the step's code: the
    // attempts then run without spans of their own (their duration is still measured), since a span
    // and a context per attempt would only be thrown away unread.
    const traced = span.isRecording() || this.contextCarried();
    const inside = traced ? api.trace.setSpan(parent, span) : parent;
    let closed = false;
    const outcome = (ended: ObservedOutcome, error?: SerializedWorkflowError | null) => {
      span.setAttribute('workflow.outcome', ended);
      // A compensating instance is not a failed execution; every other ending with an error is.
      if (error && ended !== 'compensating') span.setStatus({ code: STATUS_ERROR, message: this.describe(error) });
    };
    return {
      around: <T>(kind: ObservedOperation, name: string, attempt: number, fn: () => Promise<T>) => {
        if (!traced)
          return kind === 'step' && this.stepsMeasured ? this.timed(instance.workflow, name, fn, null) : fn();
        return tracer.startActiveSpan(
          `workflow.${kind} ${name}`,
          { attributes: { ...base, [`workflow.${kind}.name`]: name, 'workflow.attempt': attempt } },
          inside,
          (child) => (kind === 'step' ? this.timed(instance.workflow, name, fn, child) : this.spanned(fn, child)),
        );
      },
      signalTaken: (signal, latency) => {
        this.signalLatency.record(Math.max(0, latency), {
          'workflow.name': instance.workflow,
          'workflow.signal.name': signal,
        });
        span.addEvent('signal taken', { 'workflow.signal.name': signal, 'workflow.signal.latency_ms': latency });
      },
      event: (event) => {
        this.count(instance.workflow, event.type);
        const ended = OUTCOMES[event.type];
        if (ended) outcome(ended, 'error' in event ? event.error : null);
      },
      outcome,
      close: () => {
        if (closed) return;
        closed = true;
        span.end();
      },
    };
  }

  /** A step attempt, its duration measured (and recorded in `child`, its span, when there is one). */
  private async timed<T>(workflow: string, step: string, fn: () => Promise<T>, child: Span | null): Promise<T> {
    const started = performance.now();
    let failed = false;
    try {
      return await fn();
    } catch (error) {
      failed = true;
      if (child) this.fail(child, error);
      throw error;
    } finally {
      child?.end();
      this.stepDuration.record(performance.now() - started, {
        'workflow.name': workflow,
        'workflow.step.name': this.stepName(workflow, step),
        'workflow.step.outcome': failed ? 'error' : 'ok',
      });
    }
  }

  /** `step` as a metric attribute value: itself for the first `STEP_NAMES_PER_WORKFLOW` names of `workflow`, then `STEP_NAME_OTHER`. */
  private stepName(workflow: string, step: string): string {
    let names = this.stepNames.get(workflow);
    if (names === undefined) this.stepNames.set(workflow, (names = new Set()));
    if (names.has(step)) return step;
    if (names.size >= STEP_NAMES_PER_WORKFLOW) return STEP_NAME_OTHER;
    names.add(step);
    return step;
  }

  /** A compensation attempt or a child's start, in its span `child`. */
  private async spanned<T>(fn: () => Promise<T>, child: Span): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      this.fail(child, error);
      throw error;
    } finally {
      child.end();
    }
  }

  /** How an error shows in a span's status: `name: message`, or its name alone. */
  private describe(error: { name: string; message: string }): string {
    return this.errorMessages ? `${error.name}: ${error.message}` : error.name;
  }

  /** A failed attempt: its exception recorded (by type only when messages are kept out) and an error status. */
  private fail(span: Span, error: unknown): void {
    if (error instanceof Error) {
      span.recordException(this.errorMessages ? error : { name: error.name });
      span.setStatus({ code: STATUS_ERROR, message: this.describe(error) });
    } else {
      // A thrown value that is no Error (a string, an object) is data itself: shown only with messages.
      span.setStatus(this.errorMessages ? { code: STATUS_ERROR, message: String(error) } : { code: STATUS_ERROR });
    }
  }

  /**
   * Whether a context manager is registered, that is whether a context made active would reach the
   * code run inside it (the API's default manager keeps none): asked with the public API only.
   */
  private contextCarried(): boolean {
    const { context, ROOT_CONTEXT } = this.api;
    return context.with(ROOT_CONTEXT.setValue(PROBE, true), () => context.active().getValue(PROBE) === true);
  }
}

/** The key `contextCarried()` probes with. */
const PROBE = Symbol('@nestjs/workflows:context-probe');
