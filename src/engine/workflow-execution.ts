import { WorkflowInterrupt, isWorkflowInterrupt } from '../errors/workflow-interrupt.js';
import { WorkflowJournalLimitError } from '../errors/workflow-journal-limit.error.js';
import { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInstance, WorkflowJournalEntry, WorkflowJournalKind } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { NewWorkflowInstance, WorkflowWrite } from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { CHILD_ENDED_SIGNAL, ChildSupport, type ChildDeps, type ChildEnded } from './child-support.js';
import { createWorkflowContext } from './execution-context.js';
import { suspensionOf, type ExecutionHost, type Parked, type Suspension } from './execution-host.js';
import type { ExecutionObserver } from './workflow-observer.js';
import { ExecutionJournal } from './execution-journal.js';
import { ExecutionStop } from './execution-stop.js';
import type { ExecutionOutcome, RunEnd } from './execution-outcome.js';
import { FencedWrites } from './fenced-writes.js';
import { journalLimitReached, type JournalLimitEvent, type JournalLimits } from './journal-limits.js';
import { toJsonValue } from './json-value.js';
import { assertOutsideCompensation, runAsCompensation } from './compensation-scope.js';
import { assertOperationName, changedKindError, reusedNameError } from './operation-names.js';
import { RecordedValues } from './recorded-values.js';
import { PatchMarkers } from './patch-markers.js';
import type { RetryPolicy } from './retry-policy.js';
import { compensate, type Compensation, type CompensationOutcome } from './saga.js';
import { SignalWaits } from './signal-waits.js';
import { ExecutionStreams } from './execution-streams.js';
import { CallbackOperations } from './callback-operations.js';
import { cancelDeferredFlush, deferFlush, type DeferredFlush } from './deferred-flushes.js';
import type { WorkflowContext } from './workflow-context.js';

/** What an execution needs from the engine around it. */
export interface ExecutionDeps extends ChildDeps {
  storage: WorkflowStorage;
  clock: WorkflowClock;
  journalLimits: JournalLimits;
  /** The workflow's default step retry (its own, else the module's). */
  retry: RetryPolicy;
  emit(body: WorkflowEventBody): void;
  warn(message: string): void;
  /** Whether the lease ran out (or is about to) by the local clock; checked before each side effect. */
  leaseExpired?(): boolean;
  observe: ExecutionObserver; // telemetry: spans around attempts and child starts
  /** Called as the write that releases the lease (the execution's last) is made: its slot may go to the next instance. */
  ending?(): void;
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
export class WorkflowExecution implements ExecutionHost, DeferredFlush {
  readonly context: WorkflowContext;
  private readonly stop: ExecutionStop;
  /** While it runs and concludes, the shutdown that interrupts it (`LocalExecutions.hearShutdown()`). */
  shutdown: AbortSignal | null = null;
  private fatal: WorkflowNonDeterminismError | null = null;
  private journalLimitError: WorkflowJournalLimitError | null = null;
  private storeError: unknown = null;
  private readonly journal: ExecutionJournal;
  private readonly visited = new Set<string>();
  private readonly compensations = new Map<string, Compensation>();
  private readonly parked: Parked[] = [];
  /** The steps running now, by name (what a shutdown that times out reports). */
  readonly runningSteps = new Set<string>();
  callingStep: string | null = null;
  /** Whether this execution recorded anything yet (see `isRerun()` in ExecutionJournalAccess). */
  private recorded = false;
  private readonly children: ChildSupport;
  readonly streams: ExecutionStreams;
  private active = 0;
  private pendingStatus: { value: unknown } | null = null;
  private readonly writes: FencedWrites;
  private flushScheduled = false;
  private settle: ((end: RunEnd) => void) | null = null;
  private closed = false;
  /** `run()` settled, or the execution suspended or was interrupted: nothing new may start. */
  private ended = false;
  /** `run()` failed (or stopped at an interrupt) while steps still ran: the end, held until they settle (see `runFailed()`). */
  private failedRun: RunEnd | null = null;

  constructor(
    readonly instance: WorkflowInstance,
    journal: readonly WorkflowJournalEntry[],
    /** The last signal id read at the claim: this execution sees signals up to it. */
    readonly signalCursor: number,
    private readonly deps: ExecutionDeps,
    readonly replayOnly: boolean,
  ) {
    this.journal = new ExecutionJournal(journal, deps.journalLimits);
    this.stop = new ExecutionStop(instance);
    this.writes = new FencedWrites(deps.storage, instance.id, instance.leaseToken!, (failure) =>
      failure.leaseLost ? this.interrupt('lease-lost') : this.storeFailed(failure.error),
    );
    // A store failure (or a payload no configured codec can read) is not the workflow's: stop the
    // execution as a failed write does, instead of throwing into run().
    const failed = (error: unknown): never => {
      this.storeFailed(error);
      throw new WorkflowInterrupt('store-error');
    };
    // The execution is the operations' host itself (no object of closures per execution).
    const waits = new SignalWaits(this, (query) => deps.storage.signals(query).catch(failed));
    // An existing child whose input can't be decoded, likewise (other creation errors are the workflow's).
    const createChild = (child: NewWorkflowInstance) =>
      deps
        .createChild(child)
        .catch((error: unknown) => (error instanceof WorkflowPayloadError ? failed(error) : Promise.reject(error)));
    this.children = new ChildSupport(this, { resolveChild: deps.resolveChild, createChild }, (name, childId) =>
      waits.wait<ChildEnded>(name, CHILD_ENDED_SIGNAL, childId, undefined, true),
    );
    this.streams = new ExecutionStreams(this, deps.storage.streams, failed);
    this.context = createWorkflowContext(this, {
      compensations: this.compensations,
      waits,
      children: this.children,
      values: new RecordedValues(this),
      patches: new PatchMarkers(this),
      streams: this.streams,
      callbacks: new CallbackOperations(this, deps.storage.callbacks, failed),
      setStatus: (value) => {
        this.pendingStatus = { value: toJsonValue(value, 'ctx.setStatus() value', 'status') ?? null };
      },
    });
  }

  /**
   * Runs `body` (the workflow's `run()`) until it settles, suspends or is interrupted, and resolves
   * to the outcome the engine concludes from.
   */
  async run(body: () => Promise<unknown>): Promise<ExecutionOutcome> {
    const run = await new Promise<RunEnd>((resolve) => {
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
          this.runFailed(
            isWorkflowInterrupt(error) ? { kind: 'interrupted', reason: error.reason } : { kind: 'failed', error },
          ),
      );
    });
    const { fatal, journalLimitError, storeError, stop } = this;
    const { reason: interrupt, cancelRequested, terminateRequested } = stop;
    return { run, interrupt, fatal, journalLimitError, storeError, cancelRequested, terminateRequested };
  }

  /**
   * Stops the execution from outside (a cancel or terminate noticed, the lease lost, shutdown).
   * Terminate and a lost lease end it at once; the others let a running step see `ctx.signal` and
   * return, so a step that completes still records its result (and its compensation then runs).
   */
  interrupt(reason: WorkflowInterrupt['reason']): void {
    if (this.stop.request(reason) || this.active === 0) this.end({ kind: 'interrupted', reason });
  }

  /** Whether this execution writes no more, or its lease ran out (or is about to) by the local clock. */
  get leaseLapsed(): boolean {
    return this.closed || (this.deps.leaseExpired?.() ?? false);
  }

  /** The error of a store call that threw and stopped the execution (not a lost lease), or `null`. */
  get storeFailure(): unknown {
    return this.storeError;
  }

  /** No more writes from this execution (it concluded, or gave up). */
  close(): void {
    this.closed = true;
    cancelDeferredFlush(this);
  }

  /** The parked operations' earliest wake-up (`null`: none has a time) and their waits. */
  suspension(): Suspension {
    return suspensionOf(this.parked);
  }

  /** Entries an earlier execution recorded that this one never reached (compensations aside). */
  unvisited(): string[] {
    return this.journal.unvisited(this.visited);
  }

  /** Whether a completed step has a compensation that has not run. */
  needsCompensation(): boolean {
    return this.journal.needsCompensation(this.compensations);
  }

  /** Whether the instance may have children: one is journaled, this run reached a child's start, or (`run()` never ran: a terminate) an earlier execution may have created one and been cut short before journaling it. */
  hasChildren(): boolean {
    return this.children.attempted || this.journal.hasChild() || (!this.ended && this.instance.runs > 1);
  }

  /** Waits for child creations in flight (an execution ended at once may have left one running). */
  childCreationsSettled(): Promise<void> {
    return this.children.settled();
  }

  /**
   * A fenced write under the lease, queued after this execution's earlier writes, with what was
   * recorded and not written yet. Resolves to `false` (and ends the execution) when the lease is
   * gone or the store failed.
   */
  write(write: Omit<WorkflowWrite, 'now' | 'entries'> & { entries?: WorkflowJournalEntry[] }): Promise<boolean> {
    if (write.release) this.deps.ending?.();
    const entries = this.journal.take();
    const status = this.pendingStatus;
    this.pendingStatus = null;
    // `Object.assign` copies the writes' several shapes faster than a spread does.
    const full = Object.assign({}, write) as WorkflowWrite;
    if (status) full.customStatus = status.value;
    full.entries = write.entries ? [...entries, ...write.entries] : entries;
    full.now = this.deps.clock.now();
    return this.writes.push(full);
  }

  /** Runs the compensations of completed steps (see `compensate()` in saga.ts). */
  compensate(): Promise<CompensationOutcome> {
    return compensate({
      journal: () => this.journal.all(),
      entry: (name) => this.journal.get(name),
      compensationFor: (step) => this.compensations.get(step),
      stop: this.stop,
      instanceId: this.instance.id,
      now: () => this.deps.clock.now(),
      record: (entry) => this.record(entry),
      flush: () => this.flush(),
      sideEffect: async (fn, step, attempt) => {
        this.active++;
        try {
          // Terminate (or a lost lease) doesn't wait for a compensation that runs: the instance ends
          // at once, and whatever the compensation does afterwards is not recorded.
          return await Promise.race([
            this.deps.observe.around('compensation', step, attempt, () => runAsCompensation(this, fn)),
            this.stop.stopped(),
          ]);
        } finally {
          this.operationSettled();
        }
      },
    });
  }

  // ---- what the operations see (the roles in execution-host.ts: see there for each member) ----

  /** A getter: the signal is made only when a step or the workflow reads it (see ExecutionStop). */
  get abortSignal(): AbortSignal {
    return this.stop.signal;
  }

  get defaultRetry(): RetryPolicy {
    return this.deps.retry;
  }

  /** This execution's telemetry hooks. */
  get observe(): ExecutionObserver {
    return this.deps.observe;
  }

  now(): number {
    return this.deps.clock.now();
  }

  emit(body: WorkflowEventBody): void {
    this.deps.emit(body);
  }

  journalEntry(name: string): WorkflowJournalEntry | undefined {
    return this.journal.get(name);
  }

  isRerun(): boolean {
    return this.instance.runs > 1 && !this.recorded;
  }

  operationStarted(): void {
    this.active++;
  }

  stopReason(): WorkflowInterrupt['reason'] | null {
    return this.stop.reason;
  }

  stoppedAtOnce(): boolean {
    return this.stop.atOnce;
  }

  transactionsUnsupported(): string | null {
    return this.deps.storage.runsTransactions ? null : this.deps.storage.storeName;
  }

  async runTransaction<T>(
    body: (handle: unknown, write: (entry: WorkflowJournalEntry) => Promise<void>) => Promise<T>,
    timeout: number | null,
  ): Promise<T> {
    const now = () => this.deps.clock.now();
    const outcome = await this.writes.transact(
      (tx) => body(tx.handle, async (entry) => void (await tx.write({ now: now(), entries: [entry] }))),
      timeout,
    );
    if (!outcome.landed) throw new WorkflowInterrupt(this.stop.reason ?? 'lease-lost');
    return outcome.value;
  }

  encodeAhead(entry: WorkflowJournalEntry): Promise<void> | null {
    return this.deps.storage.prepareEntry(entry);
  }

  recordCommitted(entry: WorkflowJournalEntry): void {
    this.journal.written(entry);
  }

  journalAhead(): boolean {
    return this.journal.ahead(this.visited);
  }

  diverged(error: WorkflowNonDeterminismError): WorkflowNonDeterminismError {
    return this.fail(error);
  }

  /**
   * Before a new side effect: writes what was recorded, if anything, so a crash never loses a result
   * it depends on; then checks the lease is still live by the local clock, so a worker that was
   * stalled (SIGSTOP, a long pause) never starts one for an instance another worker may now run.
   */
  async flush(): Promise<void> {
    if (this.closed) return;
    const pending = this.journal.pending || this.pendingStatus !== null;
    const landed = pending ? await this.write({}) : this.writes.idle || (await this.writes.settled());
    if (!landed) throw new WorkflowInterrupt(this.stop.reason ?? 'lease-lost');
    if (this.deps.leaseExpired?.()) {
      this.interrupt('lease-lost');
      throw new WorkflowInterrupt('lease-lost');
    }
  }

  /** The store failed (a write, a read of signals): the execution stops; the lease lapses and another runs it. */
  private storeFailed(error: unknown): void {
    this.storeError = error;
    this.interrupt('store-error');
  }

  admitOperation(name: string, kind: WorkflowJournalKind, engine = false): void {
    assertOperationName(name, engine);
    this.throwIfStopped(name);
    if (this.visited.has(name)) throw this.fail(reusedNameError(this.instance, name));
    this.visited.add(name);
    const existing = this.journal.get(name);
    if (existing && existing.kind !== kind) throw this.fail(changedKindError(this.instance, name, existing.kind, kind));
  }

  throwIfStopped(name?: string): void {
    // Called by a compensation function, a ctx operation would wait for a run that already ended.
    assertOutsideCompensation(this, this.instance, name);
    // A branch still going after the run ended (the loser of a Promise.race, code after a suspension)
    // must start nothing new: its side effects would never be recorded.
    if (this.ended) throw new WorkflowInterrupt('ended');
    const { deadline } = this.instance;
    this.stop.check(this.replayOnly, () => deadline !== null && this.deps.clock.now() >= deadline);
  }

  private fail(error: WorkflowNonDeterminismError): WorkflowNonDeterminismError {
    this.fatal ??= error;
    this.end({ kind: 'failed', error });
    return error;
  }

  /**
   * Called before a side effect (a step, a child), which would otherwise run and then be neither
   * recorded nor compensated.
   */
  ensureJournalRoom(name: string): void {
    if (this.journal.hasRoom(name, (event) => this.journalLimit(event))) return;
    this.stop.reason ??= 'journal-limit';
    throw new WorkflowInterrupt('journal-limit');
  }

  record(entry: WorkflowJournalEntry): void {
    if (this.closed) return;
    this.recorded = true;
    this.keep(entry);
    this.scheduleFlush();
  }

  recordStarted(entry: WorkflowJournalEntry): void {
    if (!this.closed) this.keep(entry);
  }

  private keep(entry: WorkflowJournalEntry): void {
    if (!this.journal.record(entry, (event) => this.journalLimit(event))) {
      this.stop.reason ??= 'journal-limit';
      throw new WorkflowInterrupt('journal-limit');
    }
  }

  private journalLimit(event: JournalLimitEvent): void {
    const error = journalLimitReached(this.instance, event, this.deps);
    this.journalLimitError ??= error;
  }

  /**
   * A result recorded while nothing else is running is written by the next context call or by the
   * execution's final write, whichever comes first; this timer writes it if neither comes within
   * the current turn of the event loop (the workflow awaits something that isn't a context call).
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    deferFlush(this);
  }

  /** The turn in which `scheduleFlush()` was called ended (see `deferFlush()`). */
  flushDeferred(): void {
    this.flushScheduled = false;
    if (!this.closed && this.settle !== null && this.journal.pending) void this.write({});
  }

  suspendOperation(parked: Parked): Promise<never> {
    this.parked.push(parked);
    this.checkStalled();
    return new Promise<never>(() => undefined);
  }

  private checkStalled(): void {
    if (this.active > 0) return;
    // Give the workflow the rest of this turn: code after an awaited step may still reach new calls.
    setImmediate(() => {
      if (this.active === 0 && this.parked.length > 0) this.end(this.failedRun ?? { kind: 'suspended' });
    });
  }

  /**
   * `run()` failed, or a branch stopped at a cancel or the deadline, while other steps still run (a `Promise.all`): their side
   * effects happen anyway, so the end waits for them to be journaled and compensated. Nothing new starts; a terminate waits for nothing.
   */
  private runFailed(end: RunEnd): void {
    if (this.active === 0 || this.stop.atOnce) return this.end(end);
    this.ended = true;
    this.failedRun = end;
  }

  private end(end: RunEnd): void {
    const settle = this.settle;
    if (!settle) return;
    this.settle = null;
    this.ended = true;
    settle(end);
  }

  operationSettled(): void {
    this.active--;
    if (this.active > 0) return;
    if (this.stop.reason !== null) this.end({ kind: 'interrupted', reason: this.stop.reason });
    else if (this.failedRun !== null) this.end(this.failedRun);
    else if (this.parked.length > 0) this.checkStalled();
  }
}
