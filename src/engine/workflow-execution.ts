import { randomUUID } from 'node:crypto';
import { deserializeError, serializeError } from '../errors/serialize-error.js';
import { WorkflowInterrupt, isWorkflowInterrupt } from '../errors/workflow-interrupt.js';
import { WorkflowJournalLimitError } from '../errors/workflow-journal-limit.error.js';
import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import { WorkflowSignalTimeoutError } from '../errors/workflow-signal-timeout.error.js';
import { WorkflowTimeoutError } from '../errors/workflow-timeout.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import { signalName } from '../signals/workflow-signal.js';
import type {
  WorkflowInstance,
  WorkflowJournalEntry,
  WorkflowJournalKind,
  WorkflowWait,
} from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';
import { parseDuration, parsePositiveDuration } from '../time/duration.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { ChildSupport, type ChildDeps } from './child-support.js';
import { ExecutionJournal, type JournalLimitEvent } from './execution-journal.js';
import { compensate, failedAttempt, type Compensation, type CompensationOutcome } from './saga.js';
import type { JournalLimits } from './journal-limits.js';
import { toJsonValue } from './json-value.js';
import { resolveRetry, type RetryPolicy } from './retry-policy.js';
import type { WorkflowChildOptions, WorkflowContext, WorkflowReference, WorkflowStepOptions, WorkflowWaitOptions } from './workflow-context.js';

/** What an execution needs from the engine around it. */
export interface ExecutionDeps extends ChildDeps {
  storage: WorkflowStorage;
  clock: WorkflowClock;
  journalLimits: JournalLimits;
  /** The workflow's default step retry (its own, else the module's). */
  retry: RetryPolicy;
  emit(body: WorkflowEventBody): void;
  warn(message: string): void;
}

/** How `run()` ended for this execution. */
export type ExecutionOutcome =
  | { kind: 'completed'; value: unknown }
  | { kind: 'failed'; error: unknown }
  | { kind: 'suspended' }
  | { kind: 'interrupted'; reason: WorkflowInterrupt['reason'] };


interface Parked {
  wakeAt: number | null;
  wait: WorkflowWait | null;
}



/**
 * One execution of one claimed instance: replays `run()` against the journal, runs what is new,
 * records it under the lease, and works out how the execution ended (completed, failed, suspended
 * with a wake-up time and waits, or interrupted). Framework-free: the engine wires it to a store.
 *
 * In replay-only mode (an instance that is compensating or was cancelled) nothing new runs: every
 * step, sleep or wait the journal does not hold parks forever, so `run()` only re-registers the
 * compensations of the steps that completed.
 */
export class WorkflowExecution {
  readonly context: WorkflowContext;
  readonly abort = new AbortController();
  /** A programming error that fails the instance without compensating (a determinism violation). */
  fatal: WorkflowNonDeterminismError | null = null;
  journalLimitError: WorkflowJournalLimitError | null = null;
  interruptReason: WorkflowInterrupt['reason'] | null = null;
  /** Aborted when the execution must stop without waiting for what runs: terminate, a lost lease, a store failure. */
  private readonly stopNow = new AbortController();
  /** What the store threw, when a write failed (the execution then stops; the lease lapses). */
  storeError: unknown = null;
  cancelRequested: boolean;
  terminateRequested: boolean;
  /** The worker shuts down. Kept apart from `interruptReason`: a cancel or timeout seen first must not hide it. */
  shutdownRequested = false;

  private readonly journal: ExecutionJournal;
  private readonly visited = new Set<string>();
  private readonly compensations = new Map<string, Compensation>();
  private readonly parked: Parked[] = [];
  private readonly takenSignals = new Map<string, number>();
  private readonly children: ChildSupport;
  private active = 0;
  private valueCounter = 0;
  private pendingStatus: { value: unknown } | null = null;
  private writes: Promise<boolean> = Promise.resolve(true);
  private flushScheduled = false;
  private settle: ((outcome: ExecutionOutcome) => void) | null = null;
  private closed = false;
  /** `run()` settled, or the execution suspended or was interrupted: nothing new may start. */
  private ended = false;

  constructor(
    readonly instance: WorkflowInstance,
    journal: readonly WorkflowJournalEntry[],
    /** The last signal id read at the claim: this execution sees signals up to it. */
    readonly signalCursor: number,
    private readonly deps: ExecutionDeps,
    private readonly replayOnly: boolean,
  ) {
    this.journal = new ExecutionJournal(journal, deps.journalLimits);
    this.cancelRequested = instance.cancelRequested;
    this.terminateRequested = instance.terminateRequested;
    this.children = new ChildSupport(this, deps);
    this.context = this.createContext();
  }

  /** Runs `body` (the workflow's `run()`) until it settles, suspends or is interrupted. */
  run(body: () => Promise<unknown>): Promise<ExecutionOutcome> {
    return new Promise<ExecutionOutcome>((resolve) => {
      this.settle = resolve;
      let result: Promise<unknown>;
      try {
        result = Promise.resolve(body());
      } catch (error) {
        result = Promise.reject(error);
      }
      result.then(
        (value) => this.end({ kind: 'completed', value }),
        (error: unknown) =>
          this.end(isWorkflowInterrupt(error) ? { kind: 'interrupted', reason: error.reason } : { kind: 'failed', error }),
      );
    });
  }

  /**
   * Stops the execution from outside (a cancel or terminate noticed, the lease lost, shutdown).
   * Terminate and a lost lease end it at once; the others let a running step see `ctx.signal` and
   * return, so a step that completes still records its result (and its compensation then runs).
   */
  interrupt(reason: WorkflowInterrupt['reason']): void {
    if (this.interruptReason === null || reason === 'terminate' || reason === 'lease-lost') this.interruptReason = reason;
    if (reason === 'terminate') this.terminateRequested = this.cancelRequested = true;
    if (reason === 'terminate' || reason === 'lease-lost' || reason === 'store-error') this.stopNow.abort(new WorkflowInterrupt(reason));
    if (reason === 'cancel') this.cancelRequested = true;
    if (reason === 'shutdown') this.shutdownRequested = true;
    if (!this.abort.signal.aborted) this.abort.abort(new WorkflowInterrupt(reason));
    if (reason === 'terminate' || reason === 'lease-lost' || reason === 'store-error') {
      this.end({ kind: 'interrupted', reason });
    } else if (this.active === 0) {
      this.end({ kind: 'interrupted', reason });
    }
  }

  /** Rejects with the interrupt once the execution must stop at once (see `stopNow`). */
  private stopped(): Promise<never> {
    return new Promise<never>((_, reject) => {
      const signal = this.stopNow.signal;
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  /** Whether the execution was stopped without waiting for what runs (terminate, a lost lease, a store failure). */
  private endedAtOnce(): boolean {
    const reason = this.interruptReason;
    return reason === 'terminate' || reason === 'lease-lost' || reason === 'store-error';
  }

  /** No more writes from this execution (it concluded, or gave up). */
  close(): void {
    this.closed = true;
  }

  /** The parked operations' earliest wake-up (`null`: none has a time) and their waits. */
  suspension(): { wakeAt: number | null; waits: WorkflowWait[] } {
    let wakeAt: number | null = null;
    const waits: WorkflowWait[] = [];
    for (const parked of this.parked) {
      if (parked.wakeAt !== null) wakeAt = wakeAt === null ? parked.wakeAt : Math.min(wakeAt, parked.wakeAt);
      if (parked.wait && !waits.some((w) => w.name === parked.wait!.name && w.key === parked.wait!.key)) waits.push(parked.wait);
    }
    return { wakeAt, waits };
  }

  /** Entries an earlier execution recorded that this one never reached (compensations aside). */
  unvisited(): string[] {
    return [...this.journal.loaded].filter((name) => !this.visited.has(name) && this.journal.get(name)!.kind !== 'compensation');
  }

  /** Whether a completed step has a compensation that has not run. */
  needsCompensation(): boolean {
    for (const entry of this.journal.all()) {
      if (entry.kind === 'step' && entry.state === 'completed' && !entry.compensated && this.compensations.has(entry.name)) return true;
    }
    return false;
  }

  /** Whether the instance may have children: one is journaled, or this execution asked for one. */
  hasChildren(): boolean {
    if (this.children.attempted) return true;
    for (const entry of this.journal.all()) if (entry.kind === 'child') return true;
    return false;
  }

  /** Waits for child creations in flight (an execution ended at once may have left one running). */
  childCreationsSettled(): Promise<void> {
    return this.children.settled();
  }

  /** Takes what this execution recorded and has not written yet, with the custom status if it changed. */
  takePending(): Pick<WorkflowWrite, 'entries' | 'customStatus'> {
    const entries = this.journal.take();
    const status = this.pendingStatus;
    this.pendingStatus = null;
    return status ? { entries, customStatus: status.value } : { entries };
  }

  /**
   * A fenced write under the lease, queued after this execution's earlier writes. Resolves to
   * `false` (and ends the execution) when the lease is gone or the store failed.
   */
  write(write: Omit<WorkflowWrite, 'now' | 'entries'> & { entries?: WorkflowJournalEntry[] }): Promise<boolean> {
    const pending = this.takePending();
    const full: WorkflowWrite = {
      ...write,
      ...('customStatus' in pending ? { customStatus: pending.customStatus } : {}),
      entries: [...pending.entries, ...(write.entries ?? [])],
      now: this.deps.clock.now(),
    };
    const token = this.instance.leaseToken!;
    this.writes = this.writes.then(async (ok) => {
      if (!ok) return false;
      try {
        const landed = await this.deps.storage.write(this.instance.id, token, full);
        if (!landed) this.interrupt('lease-lost');
        return landed;
      } catch (error) {
        this.storeError = error;
        this.interrupt('store-error');
        return false;
      }
    });
    return this.writes;
  }

  /** Writes what was recorded, if anything: before a new side effect, so a crash never loses a result it depends on. */
  async flush(): Promise<void> {
    if (this.closed) return;
    if (!this.journal.pending && this.pendingStatus === null) {
      if (!(await this.writes)) throw new WorkflowInterrupt(this.interruptReason ?? 'lease-lost');
      return;
    }
    if (!(await this.write({}))) throw new WorkflowInterrupt(this.interruptReason ?? 'lease-lost');
  }

  /** Runs the compensations of completed steps (see `compensate()` in saga.ts). */
  compensate(): Promise<CompensationOutcome> {
    return compensate({
      journal: () => this.journal.all(),
      entry: (name) => this.journal.get(name),
      compensationFor: (step) => this.compensations.get(step),
      stopReason: () => {
        if (this.terminateRequested) return 'terminate';
        if (this.shutdownRequested) return 'shutdown';
        const reason = this.interruptReason;
        return reason === 'shutdown' || reason === 'lease-lost' || reason === 'store-error' ? reason : null;
      },
      now: () => this.deps.clock.now(),
      record: (entry) => this.record(entry),
      sideEffect: async (fn) => {
        await this.flush();
        this.active++;
        try {
          // Terminate (or a lost lease) doesn't wait for a compensation that runs: the instance ends
          // at once, and whatever the compensation does afterwards is not recorded.
          return await Promise.race([fn(), this.stopped()]);
        } finally {
          this.leave();
        }
      },
    });
  }

  // ---- the context ----

  private createContext(): WorkflowContext {
    const { instance } = this;
    return {
      id: instance.id,
      workflow: instance.workflow,
      version: instance.version,
      signal: this.abort.signal,
      step: (name, fn, options) => this.step(name, fn, options),
      sleep: (name, duration) => this.sleepUntilMs(name, () => this.deps.clock.now() + parseDuration(duration, `duration of sleep "${name}"`)),
      sleepUntil: (name, date) => this.sleepUntilMs(name, () => toEpoch(date, name)),
      waitForSignal: (name, signal, options) => this.waitForSignal(name, signal, options),
      startChild: (name, workflow, input, options) => this.children.start(name, workflow, input, options),
      executeChild: async <I, O>(name: string, workflow: WorkflowReference, input: I, options?: WorkflowChildOptions) =>
        (await this.children.start<I, O>(name, workflow, input, options)).result(),
      now: () => new Date(this.value('now', () => this.deps.clock.now()) as number),
      random: () => this.value('random', () => Math.random()) as number,
      uuid: () => this.value('uuid', () => randomUUID()) as string,
      setStatus: (value) => {
        this.pendingStatus = { value: toJsonValue(value, 'ctx.setStatus() value', 'status') ?? null };
      },
    };
  }

  private async step<T>(name: string, fn: (run: { attempt: number; signal: AbortSignal }) => T | Promise<T>, options: WorkflowStepOptions<T> = {}): Promise<T> {
    this.enter(name, 'step');
    const retry = options.retry === undefined ? this.deps.retry : resolveRetry(options.retry, `retry of step "${name}"`, this.deps.retry);
    if (options.compensate) {
      const compensateRetry = options.compensateRetry === undefined ? retry : resolveRetry(options.compensateRetry, `compensateRetry of step "${name}"`, this.deps.retry);
      this.compensations.set(name, { fn: options.compensate as (result: unknown) => unknown, retry: compensateRetry });
    }
    const timeout = options.timeout === undefined ? null : parsePositiveDuration(options.timeout, `timeout of step "${name}"`);
    const entry = this.journal.get(name);
    if (entry?.state === 'completed') return entry.value as T;
    if (entry?.state === 'failed') throw deserializeError(entry.error!);
    const now = this.deps.clock.now();
    if (this.replayOnly || (entry?.state === 'waiting' && entry.wakeAt != null && entry.wakeAt > now)) {
      return this.park({ wakeAt: this.replayOnly ? null : entry!.wakeAt!, wait: null });
    }
    this.ensureRoom(name);
    const attempt = (entry?.attempts ?? 0) + 1;
    this.active++;
    let value: unknown;
    let policy = retry;
    try {
      await this.flush();
      this.checkpoint();
      value = await this.attempt(name, fn, attempt, timeout);
      // A result JSON can't carry fails the step at once: another attempt would repeat the side
      // effect only to return the same kind of value.
      policy = { ...retry, attempts: attempt };
      value = toJsonValue(value, `The result of step "${name}"`, 'result');
    } catch (error) {
      if (isWorkflowInterrupt(error)) throw error;
      if (this.interruptReason !== null) throw new WorkflowInterrupt(this.interruptReason);
      return this.stepFailed(name, entry, attempt, policy, error);
    } finally {
      this.leave();
    }
    // Terminate and a lost lease end the execution without waiting for the step: its final write
    // may already be gone, so a result that comes after is neither recorded nor reported.
    if (this.endedAtOnce()) throw new WorkflowInterrupt(this.interruptReason!);
    const at = this.deps.clock.now();
    this.record({ name, kind: 'step', state: 'completed', value, attempts: attempt, createdAt: entry?.createdAt ?? at, updatedAt: at });
    this.deps.emit({ type: 'step-completed', step: name, attempt });
    this.checkpoint();
    return value as T;
  }

  private stepFailed(name: string, entry: WorkflowJournalEntry | undefined, attempt: number, retry: RetryPolicy, error: unknown): never | Promise<never> {
    const failed = failedAttempt(name, 'step', entry, attempt, retry, error, this.deps.clock.now());
    this.record(failed);
    if (failed.state === 'waiting') {
      this.deps.emit({ type: 'step-retrying', step: name, attempt, error: failed.error, retryAt: failed.wakeAt! });
      return this.park({ wakeAt: failed.wakeAt!, wait: null });
    }
    this.deps.emit({ type: 'step-failed', step: name, attempt, error: failed.error });
    throw deserializeError(failed.error);
  }

  /** One attempt of a step's function, aborted (and failed) after `timeout` ms. */
  private async attempt<T>(name: string, fn: (run: { attempt: number; signal: AbortSignal }) => T | Promise<T>, attempt: number, timeout: number | null): Promise<T> {
    if (timeout === null) return fn({ attempt, signal: this.abort.signal });
    const controller = new AbortController();
    const onAbort = () => controller.abort(this.abort.signal.reason);
    this.abort.signal.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(() => fn({ attempt, signal: controller.signal })),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const error = new WorkflowTimeoutError(`Step "${name}" of instance "${this.instance.id}" did not finish within ${timeout} ms (attempt ${attempt}).`);
            controller.abort(error);
            reject(error);
          }, timeout);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.abort.signal.removeEventListener('abort', onAbort);
    }
  }

  private async sleepUntilMs(name: string, target: () => number): Promise<void> {
    this.enter(name, 'sleep');
    const entry = this.journal.get(name);
    if (entry?.state === 'completed') return;
    const now = this.deps.clock.now();
    const wakeAt = entry?.wakeAt ?? target();
    if (this.replayOnly) return this.park({ wakeAt: null, wait: null });
    if (wakeAt <= now) {
      this.record({ name, kind: 'sleep', state: 'completed', wakeAt, createdAt: entry?.createdAt ?? now, updatedAt: now });
      return;
    }
    if (!entry) this.record({ name, kind: 'sleep', state: 'waiting', wakeAt, createdAt: now, updatedAt: now });
    return this.park({ wakeAt, wait: null });
  }

  /** @internal Also how a child's result is awaited (an engine signal named `$child-ended`). */
  async waitForSignal<T>(name: string, signal: { name: string } | string, options: WorkflowWaitOptions = {}, engine = false): Promise<T> {
    const signalNameValue = engine ? (signal as { name: string }).name : signalName(signal as never);
    if (options.key !== undefined && typeof options.key !== 'string') {
      throw new TypeError(`Invalid key for wait "${name}": ${String(options.key)}. Use a string, or leave it out.`);
    }
    this.enter(name, 'signal', engine);
    const key = options.key ?? null;
    const entry = this.journal.get(name);
    if (entry?.state === 'completed') {
      this.take(signalNameValue, key, entry.signalId ?? 0);
      return entry.value as T;
    }
    if (entry?.state === 'failed') throw deserializeError(entry.error!);
    if (this.replayOnly) return this.park({ wakeAt: null, wait: null });
    const now = this.deps.clock.now();
    const wakeAt = entry ? (entry.wakeAt ?? null) : options.timeout === undefined ? null : now + parseDuration(options.timeout, `timeout of wait "${name}"`);
    const wait = { name: signalNameValue, key };
    const afterId = Math.max(this.instance.signalCursor, this.takenSignals.get(waitKey(wait)) ?? 0);
    this.active++;
    let found;
    try {
      let records;
      try {
        records = await this.deps.storage.signals({ name: signalNameValue, key, afterId, upToId: this.signalCursor });
      } catch (error) {
        // A store failure (or a payload no configured codec can read) is not the workflow's: stop
        // the execution as a failed write does, instead of throwing into run().
        this.storeError = error;
        this.interrupt('store-error');
        throw new WorkflowInterrupt('store-error');
      }
      // A parallel wait of the same name and key may have taken a signal while this one read: take
      // the oldest still free. Parking on a signal that was already read would never be woken,
      // since the suspension's check only looks above the cursor.
      const taken = this.takenSignals.get(waitKey(wait)) ?? 0;
      found = records.find((record) => record.id > taken);
    } finally {
      this.leave();
    }
    this.checkpoint();
    if (found) {
      this.take(signalNameValue, key, found.id);
      const at = this.deps.clock.now();
      this.record({ name, kind: 'signal', state: 'completed', value: found.payload, signal: wait, signalId: found.id, createdAt: entry?.createdAt ?? at, updatedAt: at });
      return found.payload as T;
    }
    if (wakeAt !== null && wakeAt <= now) {
      const error = serializeError(new WorkflowSignalTimeoutError(`No signal "${signalNameValue}"${key === null ? '' : ` with key "${key}"`} came for wait "${name}" of instance "${this.instance.id}" before its timeout.`));
      this.record({ name, kind: 'signal', state: 'failed', error, signal: wait, wakeAt, createdAt: entry?.createdAt ?? now, updatedAt: now });
      throw deserializeError(error);
    }
    if (!entry) this.record({ name, kind: 'signal', state: 'waiting', signal: wait, wakeAt, createdAt: now, updatedAt: now });
    return this.park({ wakeAt, wait });
  }

  private value(kind: 'now' | 'random' | 'uuid', make: () => unknown): unknown {
    const name = `$${kind}:${++this.valueCounter}`;
    this.enter(name, 'value', true);
    const entry = this.journal.get(name);
    if (entry) return entry.value;
    const at = this.deps.clock.now();
    const value = make();
    this.record({ name, kind: 'value', state: 'completed', value, createdAt: at, updatedAt: at });
    return value;
  }

  private take(name: string, key: string | null, id: number): void {
    const k = waitKey({ name, key });
    this.takenSignals.set(k, Math.max(this.takenSignals.get(k) ?? 0, id));
  }

  // ---- bookkeeping ----

  /**
   * Every context call starts here: it stops the execution if it must stop, and checks that the
   * name is new in this execution and, if the journal has it, of the same kind.
   */
  enter(name: string, kind: WorkflowJournalKind, engine = false): void {
    if (typeof name !== 'string' || name.length === 0) {
      throw new TypeError(`Every step, sleep, wait and child needs a non-empty name; got ${JSON.stringify(name)}.`);
    }
    if (!engine && name.startsWith('$')) {
      throw new TypeError(`Invalid name "${name}": names starting with "$" are reserved for the engine's own journal entries.`);
    }
    this.checkpoint();
    if (this.visited.has(name)) {
      throw this.fail(new WorkflowNonDeterminismError(
        `Workflow "${this.instance.workflow}@${this.instance.version}" used the name "${name}" twice in instance "${this.instance.id}". ` +
          'Names must be unique per instance: add what tells the calls apart (an index, an id) to the name.',
      ));
    }
    this.visited.add(name);
    const existing = this.journal.get(name);
    if (existing && existing.kind !== kind) {
      throw this.fail(new WorkflowNonDeterminismError(
        `Instance "${this.instance.id}" of workflow "${this.instance.workflow}@${this.instance.version}" recorded "${name}" as a ${existing.kind}, ` +
          `but the code now reaches it as a ${kind}. Ship such changes as a new workflow version.`,
      ));
    }
  }

  /** Throws the interrupt the execution is under, if any, and stops it at the run deadline. */
  checkpoint(): void {
    // A branch still going after the run ended (the loser of a Promise.race, code after a suspension)
    // must start nothing new: its side effects would never be recorded.
    if (this.ended) throw new WorkflowInterrupt('ended');
    if (this.terminateRequested && this.interruptReason === null) this.interruptReason = 'terminate';
    if (this.cancelRequested && this.interruptReason === null && !this.replayOnly) this.interruptReason = 'cancel';
    const deadline = this.instance.deadline;
    if (this.interruptReason === null && !this.replayOnly && deadline !== null && this.deps.clock.now() >= deadline) {
      this.interruptReason = 'timeout';
    }
    if (this.interruptReason !== null) {
      if (!this.abort.signal.aborted) this.abort.abort(new WorkflowInterrupt(this.interruptReason));
      throw new WorkflowInterrupt(this.interruptReason);
    }
  }

  private fail(error: WorkflowNonDeterminismError): WorkflowNonDeterminismError {
    this.fatal ??= error;
    this.end({ kind: 'failed', error });
    return error;
  }

  /**
   * Stops the execution (journal-limit) if a new entry named `name` could not be recorded: called
   * before a side effect (a step, a child), which would otherwise run and then be neither recorded
   * nor compensated.
   */
  ensureRoom(name: string): void {
    if (this.journal.hasRoom(name, (event) => this.journalLimit(event))) return;
    this.interruptReason ??= 'journal-limit';
    throw new WorkflowInterrupt('journal-limit');
  }

  /** Records an entry to be written with the next write (and soon, if nothing else writes first). */
  record(entry: WorkflowJournalEntry): void {
    if (this.closed) return;
    if (!this.journal.record(entry, (event) => this.journalLimit(event))) {
      this.interruptReason ??= 'journal-limit';
      throw new WorkflowInterrupt('journal-limit');
    }
    this.scheduleFlush();
  }

  private journalLimit({ kind, entries, bytes }: JournalLimitEvent): void {
    const { instance } = this;
    const limits = this.deps.journalLimits;
    if (kind === 'max') {
      this.journalLimitError ??= new WorkflowJournalLimitError(
        `Instance "${instance.id}" of workflow "${instance.workflow}@${instance.version}" reached its journal limit ` +
          `(${entries} entries, ${bytes} bytes; journal.maxEntries ${limits.maxEntries}, journal.maxBytes ${limits.maxBytes}). ` +
          'Split long loops into child workflows, or raise the limits in WorkflowsModule options.',
      );
      return;
    }
    this.deps.warn(
      `Instance "${instance.id}" of workflow "${instance.workflow}" has a large journal (${entries} entries, ${bytes} bytes); ` +
        'every execution replays all of it. Consider child workflows for long loops.',
    );
    this.deps.emit({ type: 'journal-large', entries, bytes });
  }

  /**
   * A result recorded while nothing else is running is written by the next context call or by the
   * execution's final write, whichever comes first; this timer writes it if neither comes within
   * the current turn of the event loop (the workflow awaits something that isn't a context call).
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (!this.closed && this.settle !== null && this.journal.pending) void this.write({});
    });
  }

  /** Parks an operation that must wait: the execution suspends once nothing else can move. */
  park(parked: Parked): Promise<never> {
    this.parked.push(parked);
    this.checkStalled();
    return new Promise<never>(() => undefined);
  }

  private checkStalled(): void {
    if (this.active > 0) return;
    // Give the workflow the rest of this turn: code after an awaited step may still reach new calls.
    setImmediate(() => {
      if (this.active === 0 && this.parked.length > 0) this.end({ kind: 'suspended' });
    });
  }

  private end(outcome: ExecutionOutcome): void {
    const settle = this.settle;
    if (!settle) return;
    this.settle = null;
    this.ended = true;
    settle(outcome);
  }

  /** An operation starts running (the execution can't be stalled while one runs). */
  enterActive(): void {
    this.active++;
  }

  /** An operation finished running: the execution may now be stalled on parked ones, or free to stop. */
  leave(): void {
    this.active--;
    if (this.active > 0) return;
    if (this.interruptReason !== null) this.end({ kind: 'interrupted', reason: this.interruptReason });
    else if (this.parked.length > 0) this.checkStalled();
  }

  /** The journal entry recorded under `name`, if any. */
  entry(name: string): WorkflowJournalEntry | undefined {
    return this.journal.get(name);
  }

  /** The engine clock's time (children stamp their creation with it). */
  now(): number {
    return this.deps.clock.now();
  }

  get isReplayOnly(): boolean {
    return this.replayOnly;
  }
}

function waitKey(wait: WorkflowWait): string {
  return JSON.stringify([wait.name, wait.key]);
}

function toEpoch(date: Date | number, name: string): number {
  const ms = date instanceof Date ? date.getTime() : date;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new TypeError(`Invalid date for sleepUntil "${name}": ${String(date)}. Pass a Date or epoch milliseconds.`);
  }
  return ms;
}
