import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInterrupt } from '../errors/workflow-interrupt.js';
import type { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';
import type {
  WorkflowInstance,
  WorkflowJournalEntry,
  WorkflowJournalKind,
  WorkflowWait,
} from '../storage/workflow-instance.js';
import type { RetryPolicy } from './retry-policy.js';
import type { ExecutionObserver } from './workflow-observer.js';
import type { ExecutionStreams } from './execution-streams.js';

/** An operation that must wait: the execution suspends once nothing else can move. */
export interface Parked {
  /** When it is due again (`null`: only a signal, or never in replay-only mode). */
  wakeAt: number | null;
  /** The signal it waits for, if any. */
  wait: WorkflowWait | null;
}

/** Where a suspending execution stands: its earliest wake-up (`null`: none has a time) and its waits. */
export interface Suspension {
  wakeAt: number | null;
  waits: WorkflowWait[];
}

/** The suspension the parked operations add up to (each wait once). */
export function suspensionOf(parked: readonly Parked[]): Suspension {
  let wakeAt: number | null = null;
  const waits: WorkflowWait[] = [];
  for (const { wakeAt: at, wait } of parked) {
    if (at !== null) wakeAt = wakeAt === null ? at : Math.min(wakeAt, at);
    if (wait && !waits.some((w) => w.name === wait.name && w.key === wait.key)) waits.push(wait);
  }
  return { wakeAt, waits };
}

/**
 * What a context operation (a step, a sleep, a signal wait, a recorded value, a child) needs from
 * the execution it runs in, by role: what the execution is (`ExecutionState`), its journal
 * (`ExecutionJournalAccess`), the life of its operations and its stop (`OperationControl`), and the
 * store's transactions (`ExecutionTransactions`). The execution implements every role; each
 * operation lives in a file of its own and names the roles it uses.
 */
export interface ExecutionState {
  readonly instance: WorkflowInstance;
  /** The last signal id read at the claim: this execution sees signals up to it. */
  readonly signalCursor: number;
  /** Compensating or cancelled: nothing new runs, every operation the journal lacks parks forever. */
  readonly replayOnly: boolean;
  /** The workflow's default step retry. */
  readonly defaultRetry: RetryPolicy;
  /** Telemetry for this execution (spans around attempts and child starts, signal latency). */
  readonly observe: ExecutionObserver;
  /** Its streams: what steps write with `run.stream()`, and the marks of failed attempts. */
  readonly streams: ExecutionStreams;
  /** The engine clock's time. */
  now(): number;
  emit(body: WorkflowEventBody): void;
}

/** The execution's journal, as its operations read and extend it. */
export interface ExecutionJournalAccess {
  /** The journal entry recorded under `name`, if any. */
  journalEntry(name: string): WorkflowJournalEntry | undefined;
  /** Stops the execution (journal-limit) if a new entry named `name` could not be recorded. */
  ensureJournalRoom(name: string): void;
  /** Records an entry, written with the next write. */
  record(entry: WorkflowJournalEntry): void;
  /**
   * Records a step's attempt as started, for the flush before its code runs. Unlike `record()`, it
   * leaves `isRerun()` as it was: steps started beside it were running in a cut-short execution too.
   */
  recordStarted(entry: WorkflowJournalEntry): void;
  /** Writes what was recorded before a new side effect, so a crash never loses a result it depends on. */
  flush(): Promise<void>;
  /**
   * Whether this execution re-runs the instance after one that was cut short (a crash, a stall, a
   * store failure, a shutdown that stopped a step), as far as the journal tells: claimed before,
   * and nothing recorded yet by this execution. An execution that ended cleanly parked on a sleep, a
   * wait or a child, which the next one records first; one cut short did not, so the step the new
   * one reaches first without an entry is the one that was running: it runs as its second attempt.
   */
  isRerun(): boolean;
  /**
   * Encodes `entry` with the configured codec ahead of its write, so a value the codec refuses fails
   * the step that returned it; `null` when no codec is configured.
   */
  encodeAhead(entry: WorkflowJournalEntry): Promise<void> | null;
  /** An entry a committed transaction wrote: the execution knows it, and doesn't write it again. */
  recordCommitted(entry: WorkflowJournalEntry): void;
  /**
   * Whether the journal holds entries an earlier execution recorded that this one has not reached
   * yet (compensations and patch markers aside): the instance went further than the code is now.
   */
  journalAhead(): boolean;
}

/** The life of the execution's operations, and its stop. */
export interface OperationControl {
  /** Aborted when the execution is interrupted; steps see it as `ctx.signal`. */
  readonly abortSignal: AbortSignal;
  /** The steps running now, by name: a step adds itself while its function runs. */
  readonly runningSteps: Set<string>;
  /**
   * Every operation starts here: stops the execution if it must stop, and checks that the name is
   * new in this execution and, if the journal has it, of the same kind (`engine`: a `$` name).
   */
  admitOperation(name: string, kind: WorkflowJournalKind, engine?: boolean): void;
  /** Throws the interrupt the execution is under, if any (and stops it at the run deadline). */
  throwIfStopped(): void;
  /** Parks the operation until the execution suspends; the returned promise never settles. */
  suspendOperation(parked: Parked): Promise<never>;
  /** An operation starts running: the execution can't be suspended or stopped while one runs. */
  operationStarted(): void;
  /** It settled: the execution may now be suspended on parked ones, or stop. */
  operationSettled(): void;
  /** Why the execution is being stopped, or `null`. */
  stopReason(): WorkflowInterrupt['reason'] | null;
  /** Whether it was stopped without waiting for what runs (terminate, a lost lease, a store failure). */
  stoppedAtOnce(): boolean;
  /**
   * The step whose function is being called right now (its synchronous part, up to its first
   * `await`), or `null`: what `ctx.patched()` checks to refuse being called from a step.
   */
  callingStep: string | null;
  /** The code no longer matches the journal: the execution fails with `error`, which is returned to throw. */
  diverged(error: WorkflowNonDeterminismError): WorkflowNonDeterminismError;
}

/** `ctx.transaction()`'s way to the store. */
export interface ExecutionTransactions {
  /** `null` when the store runs `ctx.transaction()`; else the store's name, for the error. */
  transactionsUnsupported(): string | null;
  /**
   * `ctx.transaction()`'s attempt: once this execution's earlier writes landed, runs `body` in a
   * transaction of the store, with the driver's (or ORM's) handle and `write`, which records an
   * entry in that transaction under the lease. Resolves to what `body` resolved to, once committed.
   * A lost lease (nothing committed) ends the execution and throws its `WorkflowInterrupt`.
   */
  runTransaction<T>(
    body: (handle: unknown, write: (entry: WorkflowJournalEntry) => Promise<void>) => Promise<T>,
    timeout: number | null,
  ): Promise<T>;
}

/** What an operation sees: every role but the transactions, which only `ctx.transaction()` uses. */
export type OperationHost = ExecutionState & ExecutionJournalAccess & OperationControl;

/** Every role: what the context and `ctx.transaction()` see. */
export type ExecutionHost = OperationHost & ExecutionTransactions;
