import { deserializeError } from '../errors/serialize-error.js';
import { WorkflowInterrupt, isWorkflowInterrupt } from '../errors/workflow-interrupt.js';
import { WorkflowTimeoutError } from '../errors/workflow-timeout.error.js';
import { checkOptions } from '../options/known-keys.js';
import { plainCopy } from '../storage/plain-copy.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import { parsePositiveDuration } from '../time/duration.js';
import { attemptWithin } from './attempt-timeout.js';
import type { OperationHost } from './execution-host.js';
import { withHostSignal } from './host-signal.js';
import { withStepStream } from './step-run-stream.js';
import { toJsonValue } from './json-value.js';
import { resolveRetry, type RetryPolicy } from './retry-policy.js';
import { failedAttempt, type Compensation } from './saga.js';
import type { WorkflowStepOptions, WorkflowStepRun } from './workflow-context.js';

type StepFn<T> = (run: WorkflowStepRun) => T | Promise<T>;

/** What one attempt of a step-like operation settles to: its result, and whether it wrote its own entry. */
export interface AttemptOutcome {
  value: unknown;
  /** The completed entry, when the attempt wrote it itself (in `ctx.transaction()`'s transaction). */
  written: WorkflowJournalEntry | null;
}

/** What an attempt needs to finish: the result checked as JSON, and the entry that records it. */
export interface AttemptFinish {
  /** The result as JSON carries it; a result JSON can't carry throws, and fails the step at once. */
  json(value: unknown): unknown;
  /** The completed entry for `value` (a JSON value). */
  entry(value: unknown): WorkflowJournalEntry;
}

/** Runs one attempt (number `attempt`, bounded by `timeout` ms). */
export type PerformAttempt = (
  attempt: number,
  timeout: number | null,
  finish: AttemptFinish,
) => Promise<AttemptOutcome>;

/**
 * `ctx.step()`: returns the journaled result (or throws the journaled failure) on replay; else
 * runs one attempt, records its result, or records the failure and parks until the backoff ends
 * while attempts remain. Registers the step's compensation in `compensations` either way.
 */
export function runStep<T>(
  host: OperationHost,
  compensations: Map<string, Compensation>,
  name: string,
  fn: StepFn<T>,
  options: WorkflowStepOptions<T> = {},
): Promise<T> {
  return runStepWith<T>(host, compensations, name, options, (attempt, timeout, finish) =>
    stepAttempt(host, name, fn, attempt, timeout, finish),
  );
}

/** One attempt of `ctx.step()`: the function's result, checked as JSON. */
async function stepAttempt<T>(
  host: OperationHost,
  name: string,
  fn: StepFn<T>,
  attempt: number,
  timeout: number | null,
  finish: AttemptFinish,
): Promise<AttemptOutcome> {
  return { value: finish.json(await runAttempt(host, name, fn, attempt, timeout)), written: null };
}

/**
 * An attempt's `AttemptFinish`, and the retry policy its failure is judged by: a result JSON can't
 * carry fails the step at once, since another attempt would repeat the side effect only to return
 * the same kind of value. One object per attempt (a class: no closures to make).
 */
class StepFinish implements AttemptFinish {
  policy: RetryPolicy;

  constructor(
    private readonly host: OperationHost,
    private readonly name: string,
    private readonly previous: WorkflowJournalEntry | undefined,
    private readonly attempt: number,
    private readonly retry: RetryPolicy,
  ) {
    this.policy = retry;
  }

  json(value: unknown): unknown {
    this.policy = { ...this.retry, attempts: this.attempt };
    const json = toJsonValue(value, `The result of step "${this.name}"`, 'result');
    this.policy = this.retry;
    return json;
  }

  entry(value: unknown): WorkflowJournalEntry {
    const at = this.host.now();
    return {
      name: this.name,
      kind: 'step',
      state: 'completed',
      value,
      attempts: this.attempt,
      createdAt: this.previous?.createdAt ?? at,
      updatedAt: at,
    };
  }

  /**
   * The completed entry for `value`, encoded ahead of its write when a codec is configured. A value
   * the codec refuses (too large for a KMS, say) fails the step at once, as one JSON can't carry
   * does: left to the write, it would stop the execution as a store failure does, and every later
   * execution would run the step again and fail the same way.
   */
  complete(value: unknown): WorkflowJournalEntry | Promise<WorkflowJournalEntry> {
    const entry = this.entry(value);
    const encoding = this.host.encodeAhead(entry);
    if (encoding === null) return entry;
    this.policy = { ...this.retry, attempts: this.attempt };
    return encoding.then(
      () => {
        this.policy = this.retry;
        return entry;
      },
      (error: unknown) => {
        throw new TypeError(
          `The result of step "${this.name}" could not be encoded by the payload codec (${error instanceof Error ? error.message : String(error)}), ` +
            'so it was not recorded and the step failed without another attempt. Return less from the step (keep large data ' +
            'elsewhere and return a reference to it), or fix the codec.',
          { cause: error },
        );
      },
    );
  }
}

/** What `ctx.step()` and `ctx.transaction()` take in their options (`WorkflowStepOptions`). */
const STEP_OPTIONS = ['retry', 'timeout', 'compensate', 'compensateRetry', 'compensateTimeout'];

/** A step whose attempts `perform` runs (`ctx.step()`, `ctx.transaction()`): replay, retries, compensation. */
export async function runStepWith<T>(
  host: OperationHost,
  compensations: Map<string, Compensation>,
  name: string,
  options: WorkflowStepOptions<T>,
  perform: PerformAttempt,
): Promise<T> {
  checkOptions(options, STEP_OPTIONS, `options of step "${name}"`);
  host.admitOperation(name, 'step');
  const retry =
    options.retry === undefined
      ? host.defaultRetry
      : resolveRetry(options.retry, `retry of step "${name}"`, host.defaultRetry);
  const timeout =
    options.timeout === undefined ? null : parsePositiveDuration(options.timeout, `timeout of step "${name}"`);
  // Checked with or without `compensate`: a bad value is an error wherever it is written.
  const compensateTimeout =
    options.compensateTimeout === undefined
      ? timeout
      : parsePositiveDuration(options.compensateTimeout, `compensateTimeout of step "${name}"`, "the step's timeout");
  if (options.compensate) {
    const compensateRetry =
      options.compensateRetry === undefined
        ? retry
        : resolveRetry(options.compensateRetry, `compensateRetry of step "${name}"`, host.defaultRetry);
    compensations.set(name, {
      fn: options.compensate as Compensation['fn'],
      retry: compensateRetry,
      timeout: compensateTimeout,
    });
  }
  const entry = host.journalEntry(name);
  // The code gets a copy of the journaled value, on replay as on the first run: what it changes in
  // place must not change the entry (written later, or again with a saga's flag).
  if (entry?.state === 'completed') return plainCopy(entry.value) as T;
  if (entry?.state === 'failed') throw deserializeError(entry.error!);
  const now = host.now();
  if (host.replayOnly || (entry?.state === 'waiting' && entry.wakeAt != null && entry.wakeAt > now)) {
    return host.suspendOperation({ wakeAt: host.replayOnly ? null : entry!.wakeAt!, wait: null });
  }
  host.ensureJournalRoom(name);
  // A crash mid-step counts: reached first by a re-run (see `isRerun()`), a step with no entry was running.
  const attempt = entry ? (entry.attempts ?? 0) + 1 : host.isRerun() ? 2 : 1;
  // Any attempt but a step's plain first is journaled as started before its code runs (the flush
  // below): a process killed during it leaves the count in the store, so the next is a new number.
  if (entry !== undefined || attempt > 1) host.recordStarted(startedEntry(name, entry, attempt, host.now()));
  host.operationStarted();
  let outcome: AttemptOutcome;
  let completed: WorkflowJournalEntry | null = null;
  const finish = new StepFinish(host, name, entry, attempt, retry);
  try {
    await host.flush();
    host.throwIfStopped();
    host.runningSteps.add(name);
    outcome = await host.observe.around('step', name, attempt, () => perform(attempt, timeout, finish));
    if (!outcome.written) {
      const done = finish.complete(outcome.value);
      completed = done instanceof Promise ? await done : done;
    }
  } catch (error) {
    // Before the failure is recorded and the execution may suspend: readers learn the attempt is void.
    await host.streams.attemptEnded(name, attempt, true);
    if (isWorkflowInterrupt(error)) throw error;
    const reason = host.stopReason();
    if (reason !== null) throw new WorkflowInterrupt(reason);
    return stepFailed(host, name, entry, attempt, finish.policy, error);
  } finally {
    host.runningSteps.delete(name);
    host.operationSettled();
  }
  void host.streams.attemptEnded(name, attempt, false);
  if (outcome.written) host.recordCommitted(outcome.written);
  // Terminate and a lost lease end the execution without waiting for the step: its final write
  // may already be gone, so a result that comes after is neither recorded nor reported.
  if (host.stoppedAtOnce()) throw new WorkflowInterrupt(host.stopReason()!);
  if (completed !== null) host.record(completed);
  host.emit({ type: 'step-completed', step: name, attempt });
  host.throwIfStopped();
  return plainCopy(outcome.value) as T;
}

/**
 * The entry that records attempt `attempt` of step `name` as started: still waiting (due now), its
 * attempts counting this one, the last failure kept for whoever looks.
 */
function startedEntry(
  name: string,
  previous: WorkflowJournalEntry | undefined,
  attempt: number,
  now: number,
): WorkflowJournalEntry {
  const started: WorkflowJournalEntry = {
    name,
    kind: 'step',
    state: 'waiting',
    attempts: attempt,
    wakeAt: null,
    createdAt: previous?.createdAt ?? now,
    updatedAt: now,
  };
  if (previous?.error) started.error = previous.error;
  return started;
}

function stepFailed(
  host: OperationHost,
  name: string,
  entry: WorkflowJournalEntry | undefined,
  attempt: number,
  retry: RetryPolicy,
  error: unknown,
): Promise<never> {
  const failed = failedAttempt(name, 'step', entry, attempt, retry, error, host.now());
  host.record(failed);
  if (failed.state === 'waiting') {
    host.emit({ type: 'step-retrying', step: name, attempt, error: failed.error, retryAt: failed.wakeAt! });
    return host.suspendOperation({ wakeAt: failed.wakeAt!, wait: null });
  }
  host.emit({ type: 'step-failed', step: name, attempt, error: failed.error });
  throw deserializeError(failed.error);
}

/**
 * One attempt of a step's function, aborted (and failed) after `timeout` ms. Without a timeout,
 * what the function returns or throws, as it does (the callers await it): no promise of its own.
 */
export function runAttempt<T>(
  host: OperationHost,
  name: string,
  fn: StepFn<T>,
  attempt: number,
  timeout: number | null,
): T | Promise<T> {
  // The signal is made only when the step reads it: most never do, and making one costs.
  if (timeout === null)
    return callStep(host, name, fn, withStepStream(withHostSignal({ attempt }, host), host.streams, name, attempt));
  return attemptWithin(
    host.abortSignal,
    timeout,
    () =>
      new WorkflowTimeoutError(
        `Step "${name}" of instance "${host.instance.id}" did not finish within ${timeout} ms (attempt ${attempt}).`,
      ),
    (signal) => callStep(host, name, fn, withStepStream({ attempt, signal }, host.streams, name, attempt)),
  );
}

/** Calls a step's function with `callingStep` set for its synchronous part (see `ctx.patched()`). */
function callStep<T>(host: OperationHost, name: string, fn: StepFn<T>, run: WorkflowStepRun): T | Promise<T> {
  const outer = host.callingStep;
  host.callingStep = name;
  try {
    return fn(run);
  } finally {
    host.callingStep = outer;
  }
}
