import type { WorkflowParentClose } from '../storage/workflow-instance.js';
import type { WorkflowSignal } from '../signals/workflow-signal.js';
import type { Duration } from '../time/duration.js';
import type { WorkflowRetry } from './retry-policy.js';

/** What a step's function receives. */
export interface WorkflowStepRun {
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted when the execution stops (cancel, terminate, shutdown, lost lease) or the step times out. */
  signal: AbortSignal;
  /**
   * A stream of the instance, written live from this attempt: readers see each value as it is
   * written, tagged with the step and this attempt. At least once: if the attempt fails, a
   * `discard` item naming it follows on each stream it wrote to (readers void its values); an
   * attempt cut short by a crash leaves no such mark, and the step's next attempt writes again.
   */
  stream<T = unknown>(name: string): WorkflowStream<T>;
}

/**
 * A stream of an instance (`ctx.stream(name)`, a step's `run.stream(name)`): values in order,
 * readable live with `client.readStream()`. Await each call: it resolves once the value is stored.
 */
export interface WorkflowStream<T = unknown> {
  readonly name: string;
  /**
   * Appends `value` (a JSON value, passed through the payload codec). From the workflow body, each
   * write is stored exactly once however often the body is replayed (writes are matched by their
   * order among the body's writes to this stream). Throws `WorkflowStreamClosedError` after
   * `close()`, `WorkflowStreamLimitError` past a stream limit (nothing stored either way).
   */
  write(value: T): Promise<void>;
  /** Closes the stream for good: readers end once they have read every value. Closing twice is a no-op. */
  close(): Promise<void>;
}

/** What a step's compensation receives after the step's result. */
export interface WorkflowCompensationRun {
  /** 1 for the first attempt of the compensation (counted apart from the step's attempts). */
  attempt: number;
  /**
   * Aborted when this attempt passes its `compensateTimeout`, or when the compensations must stop:
   * terminate, shutdown, a lost lease. Not by a cancel or the run timeout: they are why it runs.
   * Pass it on to `fetch` and friends, so an undo that can't finish stops its I/O.
   */
  signal: AbortSignal;
}

export interface WorkflowStepOptions<T> {
  /** Retries of this step; default the workflow's, then the module's (3 attempts, 1s doubling up to 5m). */
  retry?: WorkflowRetry;
  /** An attempt that takes longer fails with `WorkflowTimeoutError` (and is retried as any failure). Default: no limit. */
  timeout?: Duration;
  /**
   * The saga's undo: run with the step's result, in reverse order, if a later step fails or the
   * instance is cancelled or times out. The second argument (`attempt`, `signal`) may be left out.
   */
  compensate?: (result: T, run: WorkflowCompensationRun) => unknown;
  /** Retries of the compensation; default the step's. */
  compensateRetry?: WorkflowRetry;
  /**
   * An attempt of the compensation that takes longer fails with `WorkflowTimeoutError` (its signal
   * aborts) and is retried under `compensateRetry`; when none is left the instance ends
   * `compensation_failed`. Default: the step's `timeout` (none: no limit).
   */
  compensateTimeout?: Duration;
}

/** `ctx.transaction()`'s options: `ctx.step()`'s (`retry`, `timeout`, `compensate`, `compensateRetry`, `compensateTimeout`). */
export type WorkflowTransactionOptions<T> = WorkflowStepOptions<T>;

export interface WorkflowWaitOptions {
  /** Only a signal sent with exactly this key matches (none: only signals sent without a key). */
  key?: string;
  /** Throw `WorkflowSignalTimeoutError` when no signal came within this. */
  timeout?: Duration;
}

/** `ctx.createCallback()`'s options. */
export interface WorkflowCallbackOptions {
  /**
   * From then on the callback can't be completed (`completeCallback()` throws
   * `WorkflowCallbackTokenError` with reason `'expired'`), and `ctx.waitForCallback()` throws
   * `WorkflowCallbackTimeoutError`. Default: no limit.
   */
  timeout?: Duration;
}

/** A workflow class: what `@Workflow` decorates. */
export type WorkflowReference = (abstract new (...args: never[]) => WorkflowDefinition<never, unknown>) | string;

export interface WorkflowChildOptions {
  /** The child's id. Default `<parent id>/<name>`, so a replay finds the same child. */
  id?: string;
  version?: number;
  /** What happens to it when the parent ends first. Default `'cancel'`. */
  parentClose?: WorkflowParentClose;
  concurrencyKey?: string;
  rateLimitKey?: string;
  priority?: number;
  timeout?: Duration;
}

/** A started child: its id, and its outcome. */
export interface WorkflowChildHandle<O> {
  readonly id: string;
  /** Waits (durably) for the child to end: its output, or `WorkflowChildFailedError`. */
  result(): Promise<O>;
}

/**
 * What `run(ctx, input)` receives. Every method is deterministic under replay: a step, sleep,
 * wait or value recorded by an earlier execution returns what was recorded. Names must be unique
 * per instance. Steps, sleeps and waits may run in parallel (`Promise.all`).
 */
export interface WorkflowContext {
  readonly id: string;
  readonly workflow: string;
  readonly version: number;
  /** Aborted when the execution must stop: cancel, terminate, shutdown, a lost lease. */
  readonly signal: AbortSignal;
  step<T>(name: string, fn: (run: WorkflowStepRun) => T | Promise<T>, options?: WorkflowStepOptions<T>): Promise<T>;
  /**
   * A step whose callback runs in a database transaction on the store's own database (SQL stores
   * only), with the step's result recorded in that same transaction: the callback's writes and the
   * result commit together, or neither does and the step runs again. `tx` is the transaction's
   * driver client (a `pg` client with `fromPg()`). Retries, timeout and compensation as for
   * `step()`; a serialization failure or deadlock is retried at once.
   */
  transaction<T, Tx = unknown>(
    name: string,
    fn: (tx: Tx, run: WorkflowStepRun) => T | Promise<T>,
    options?: WorkflowTransactionOptions<T>,
  ): Promise<T>;
  sleep(name: string, duration: Duration): Promise<void>;
  sleepUntil(name: string, date: Date | number): Promise<void>;
  waitForSignal<T>(name: string, signal: WorkflowSignal<T> | string, options?: WorkflowWaitOptions): Promise<T>;
  startChild<I, O>(
    name: string,
    workflow: (abstract new (...args: never[]) => WorkflowDefinition<I, O>) | string,
    input: I,
    options?: WorkflowChildOptions,
  ): Promise<WorkflowChildHandle<O>>;
  executeChild<I, O>(
    name: string,
    workflow: (abstract new (...args: never[]) => WorkflowDefinition<I, O>) | string,
    input: I,
    options?: WorkflowChildOptions,
  ): Promise<O>;
  /** The time, recorded: the same `Date` on every replay. */
  now(): Date;
  /** A number in [0, 1), recorded. */
  random(): number;
  /** A v4 UUID, recorded. */
  uuid(): string;
  /** A custom status readable with `getStatus()`; written with the instance's next write. */
  setStatus(value: unknown): void;
  /**
   * Whether this instance takes the patched branch of a change made under running instances
   * (docs/deploying-changes.md): `true` where the instance reaches this point on code that has the
   * patch, `false` on the replay of an instance that went past this point before the patch existed.
   * The first answer is journaled (a `$patch:<id>` marker), so it never changes for an instance.
   * Synchronous; refused inside a step's function (`WorkflowPatchError`).
   */
  patched(patchId: string): boolean;
  /**
   * The clean-up release of a patch: the code keeps only the patched branch. Records the marker for
   * new instances (so rolling back to the release with `patched()` stays safe); an instance that went
   * past this point without the patch fails with `WorkflowNonDeterminismError` instead of running
   * the new branch against its old journal.
   */
  deprecatePatch(patchId: string): void;
  /**
   * The instance's stream `name` (a non-empty string, at most 255 characters), for clients that
   * follow it live (`client.readStream()`, `toServerSentEvents()`). Needs a store with streams
   * (every store this package ships).
   */
  stream<T = unknown>(name: string): WorkflowStream<T>;
  /**
   * Makes the callback `name` and its token: at least 128 random bits (256, base64url), bound to this
   * instance and usable once, by `client.completeCallback(token, payload)` or `failCallback(token,
   * error)` from anywhere (a webhook, a person's click). The same token on every replay. Hand it out
   * from a step (the URL you give a payment provider, a link in an email).
   */
  createCallback(name: string, options?: WorkflowCallbackOptions): Promise<{ token: string }>;
  /**
   * Waits (durably: the instance suspends) for the callback `name` to be completed, and resolves with
   * the payload; throws the error given to `failCallback()`, or `WorkflowCallbackTimeoutError` once
   * its timeout passed. A completion that came before the wait is not lost.
   */
  waitForCallback<T = unknown>(name: string): Promise<T>;
}

/** A workflow: `@Workflow(...)` on a class that implements this. */
export interface WorkflowDefinition<I = unknown, O = unknown> {
  run(ctx: WorkflowContext, input: I): Promise<O>;
}
