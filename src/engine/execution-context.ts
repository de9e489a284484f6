import { shownValue } from '../errors/shown-value.js';
import { randomUUID } from 'node:crypto';
import { checkOptions } from '../options/known-keys.js';
import { signalName, type WorkflowSignal } from '../signals/workflow-signal.js';
import { parseDuration } from '../time/duration.js';
import type { ChildSupport } from './child-support.js';
import type { ExecutionHost } from './execution-host.js';
import { withHostSignal } from './host-signal.js';
import type { RecordedValues } from './recorded-values.js';
import type { PatchMarkers } from './patch-markers.js';
import type { Compensation } from './saga.js';
import type { SignalWaits } from './signal-waits.js';
import type { ExecutionStreams } from './execution-streams.js';
import type { CallbackOperations } from './callback-operations.js';
import { sleepTarget, sleepUntil } from './sleep-operation.js';
import { runStep } from './step-operation.js';
import { runTransaction } from './transaction-operation.js';
import type {
  WorkflowChildOptions,
  WorkflowContext,
  WorkflowReference,
  WorkflowWaitOptions,
} from './workflow-context.js';

/** The per-execution state the context's operations keep. */
export interface ContextParts {
  /** Filled by `ctx.step(..., { compensate })`, read when the execution compensates. */
  compensations: Map<string, Compensation>;
  waits: SignalWaits;
  children: ChildSupport;
  values: RecordedValues;
  patches: PatchMarkers;
  /** `ctx.stream()`'s writes. */
  streams: ExecutionStreams;
  /** `ctx.createCallback()` and `ctx.waitForCallback()`. */
  callbacks: CallbackOperations;
  /** `ctx.setStatus()`: written with the execution's next write. */
  setStatus(value: unknown): void;
}

/** What `ctx.waitForSignal()` takes in its options (`WorkflowWaitOptions`). */
const WAIT_OPTIONS = ['key', 'timeout'];

/** The `ctx` a workflow's `run()` gets: each call is one operation of the execution behind `host`. */
export function createWorkflowContext(host: ExecutionHost, parts: ContextParts): WorkflowContext {
  const { instance } = host;
  const { compensations, waits, children, values, patches } = parts;
  // `signal` after the id, workflow and version, where an object literal's getter had it.
  const ctx = withHostSignal({ id: instance.id, workflow: instance.workflow, version: instance.version }, host);
  return Object.assign(ctx, {
    step: (name, fn, options) => runStep(host, compensations, name, fn, options),
    transaction: (name, fn, options) => runTransaction(host, compensations, name, fn, options),
    sleep: (name, duration) =>
      sleepUntil(host, name, () => host.now() + parseDuration(duration, `duration of sleep "${name}"`)),
    sleepUntil: (name, date) => sleepUntil(host, name, () => sleepTarget(date, name)),
    waitForSignal: async <T>(
      name: string,
      signal: WorkflowSignal<T> | string,
      options: WorkflowWaitOptions = {},
    ): Promise<T> => {
      checkOptions(options, WAIT_OPTIONS, `options of wait "${name}"`);
      const signalNameValue = signalName(signal);
      if (options.key !== undefined && typeof options.key !== 'string') {
        throw new TypeError(
          `Invalid key for wait "${name}": ${shownValue(options.key)}. Use a string, or leave it out.`,
        );
      }
      return waits.wait<T>(name, signalNameValue, options.key ?? null, options.timeout, false);
    },
    startChild: (name, workflow, input, options) => children.start(name, workflow, input, options),
    executeChild: async <I, O>(name: string, workflow: WorkflowReference, input: I, options?: WorkflowChildOptions) =>
      (await children.start<I, O>(name, workflow, input, options)).result(),
    now: () => new Date(values.value('now', () => host.now()) as number),
    random: () => values.value('random', () => Math.random()) as number,
    uuid: () => values.value('uuid', () => randomUUID()) as string,
    setStatus: (value: unknown) => parts.setStatus(value),
    patched: (patchId: string) => patches.patched(patchId),
    deprecatePatch: (patchId: string) => patches.deprecatePatch(patchId),
    stream: (name) => parts.streams.body(name),
    createCallback: (name, options) => parts.callbacks.create(name, options),
    waitForCallback: (name) => parts.callbacks.wait(name),
  } satisfies Omit<WorkflowContext, 'id' | 'workflow' | 'version' | 'signal'>);
}
