import { NonRetryableError } from '../errors/non-retryable.error.js';
import { WorkflowTimeoutError } from '../errors/workflow-timeout.error.js';
import { isWorkflowInterrupt, type WorkflowInterrupt } from '../errors/workflow-interrupt.js';
import { serializeError } from '../errors/serialize-error.js';
import { plainCopy } from '../storage/plain-copy.js';
import type { SerializedWorkflowError, WorkflowJournalEntry } from '../storage/workflow-instance.js';
import { attemptWithin } from './attempt-timeout.js';
import type { ExecutionStop } from './execution-stop.js';
import { backoffAfter, type RetryPolicy } from './retry-policy.js';
import type { WorkflowCompensationRun } from './workflow-context.js';

/** The engine's journal names start with `$`; a step's compensation is recorded under this prefix. */
export const COMPENSATION_PREFIX = '$compensate:';

/** A step's undo, as `ctx.step(..., { compensate })` registered it. */
export interface Compensation {
  fn: (result: unknown, run: WorkflowCompensationRun) => unknown;
  retry: RetryPolicy;
  /** Each attempt's bound in ms (`compensateTimeout`, else the step's `timeout`), or `null` for none. */
  timeout: number | null;
}

/** Where the compensations stand after `compensate()`. */
export type CompensationOutcome =
  | { state: 'done' }
  | { state: 'failed'; error: SerializedWorkflowError }
  | { state: 'suspended'; wakeAt: number | null }
  | { state: 'interrupted'; reason: WorkflowInterrupt['reason'] };

/**
 * A failed attempt of a step or a compensation, as its journal entry: `waiting` until the backoff
 * ends while attempts remain (and the error isn't a `NonRetryableError`), else `failed`.
 */
export function failedAttempt(
  name: string,
  kind: 'step' | 'compensation',
  previous: WorkflowJournalEntry | undefined,
  attempt: number,
  retry: RetryPolicy,
  error: unknown,
  now: number,
): WorkflowJournalEntry & { error: SerializedWorkflowError } {
  const serialized = serializeError(error);
  const base = {
    name,
    kind,
    attempts: attempt,
    error: serialized,
    createdAt: previous?.createdAt ?? now,
    updatedAt: now,
  };
  if (attempt < retry.attempts && !(error instanceof NonRetryableError)) {
    return { ...base, state: 'waiting', wakeAt: now + backoffAfter(retry, attempt) };
  }
  return { ...base, state: 'failed' };
}

/** What running the compensations needs of an execution. */
export interface SagaHost {
  journal(): Iterable<WorkflowJournalEntry>;
  entry(name: string): WorkflowJournalEntry | undefined;
  compensationFor(step: string): Compensation | undefined;
  /**
   * Why the compensations must stop now, if they must (`compensationStop()`: terminate, shutdown, a
   * lost lease), and the signal that aborts when they must (what a compensation's `signal` follows
   * besides its timeout).
   */
  readonly stop: Pick<ExecutionStop, 'compensationStop' | 'compensationSignal'>;
  /** The instance's id, for the message of a compensation that timed out. */
  readonly instanceId: string;
  now(): number;
  record(entry: WorkflowJournalEntry): void;
  /** Writes what was recorded (before a side effect); throws the execution's interrupt when the write did not land. */
  flush(): Promise<void>;
  /** Runs `fn`, attempt `attempt` of the compensation of step `step`, as a side effect (after `flush()`). */
  sideEffect<T>(fn: () => Promise<T>, step: string, attempt: number): Promise<T>;
}

/**
 * Runs the compensations of completed steps, newest first. Each is journaled, so one that succeeded
 * never runs again (the step is marked `compensated`, so an operator's retry runs the step again),
 * and each is retried with durable backoff: the instance suspends, `compensating`, until it is due.
 */
export async function compensate(host: SagaHost): Promise<CompensationOutcome> {
  const steps = [...host.journal()]
    .filter((e) => e.kind === 'step' && e.state === 'completed' && !e.compensated)
    .reverse();
  for (const step of steps) {
    const compensation = host.compensationFor(step.name);
    if (!compensation) continue;
    const stop = host.stop.compensationStop();
    if (stop) return { state: 'interrupted', reason: stop };
    const name = COMPENSATION_PREFIX + step.name;
    const entry = host.entry(name);
    const now = host.now();
    if (entry?.state === 'completed') {
      host.record({ ...step, compensated: true, updatedAt: now });
      continue;
    }
    if (entry?.state === 'failed') return { state: 'failed', error: entry.error! };
    if (entry?.state === 'waiting' && entry.wakeAt != null && entry.wakeAt > now)
      return { state: 'suspended', wakeAt: entry.wakeAt };
    const attempt = (entry?.attempts ?? 0) + 1;
    try {
      await host.flush();
      // A stop noticed while that write was under way (a terminate) starts no further compensation.
      const stopped = host.stop.compensationStop();
      if (stopped) return { state: 'interrupted', reason: stopped };
      // A copy: the entry is recorded again (compensated) and must keep the result as journaled.
      const value = plainCopy(step.value);
      await host.sideEffect(() => runCompensation(host, compensation, step.name, value, attempt), step.name, attempt);
    } catch (error) {
      if (isWorkflowInterrupt(error)) return { state: 'interrupted', reason: error.reason };
      // A compensation that failed because the execution is being stopped (its signal aborted at a
      // shutdown, say) has not spent an attempt: the next execution runs it again.
      const stopped = host.stop.compensationStop();
      if (stopped) return { state: 'interrupted', reason: stopped };
      const failed = failedAttempt(name, 'compensation', entry, attempt, compensation.retry, error, host.now());
      host.record(failed);
      if (failed.state === 'waiting') return { state: 'suspended', wakeAt: failed.wakeAt! };
      return { state: 'failed', error: { ...failed.error, step: step.name } };
    }
    const at = host.now();
    host.record({
      name,
      kind: 'compensation',
      state: 'completed',
      attempts: attempt,
      createdAt: entry?.createdAt ?? at,
      updatedAt: at,
    });
    host.record({ ...step, compensated: true, updatedAt: at });
  }
  return { state: 'done' };
}

/**
 * One attempt of a compensation, given `{ attempt, signal }`: within its timeout, when it has one
 * (an attempt that passes it fails with `WorkflowTimeoutError` and its signal aborts), else as it
 * runs, with the stop signal (made only if the compensation reads it).
 */
async function runCompensation(
  host: SagaHost,
  compensation: Compensation,
  step: string,
  value: unknown,
  attempt: number,
): Promise<unknown> {
  const { timeout } = compensation;
  if (timeout === null) {
    return compensation.fn(value, {
      attempt,
      get signal() {
        return host.stop.compensationSignal;
      },
    });
  }
  return attemptWithin(
    host.stop.compensationSignal,
    timeout,
    () =>
      new WorkflowTimeoutError(
        `Compensation of step "${step}" of instance "${host.instanceId}" did not finish within ${timeout} ms (attempt ${attempt}).`,
      ),
    (signal) => compensation.fn(value, { attempt, signal }),
  );
}
