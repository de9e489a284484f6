import { setMaxListeners } from 'node:events';
import { WorkflowInterrupt } from '../errors/workflow-interrupt.js';

type Reason = WorkflowInterrupt['reason'];

/** Reasons that end an execution without waiting for what runs: whatever runs after is never recorded. */
const AT_ONCE: ReadonlySet<Reason> = new Set<Reason>(['terminate', 'lease-lost', 'store-error']);

/**
 * Why one execution is being stopped, and the signals that carry it: `signal` (what `ctx.signal`
 * and running steps see), `compensationSignal` (what a running compensation sees) and the
 * stop-at-once signal that `stopped()` turns into a rejection, for work nothing waits out (a
 * compensation running when a terminate comes). Each `AbortController`
 * is made when something first asks for its signal (already aborted if the stop came first): most
 * executions never stop early, and an `AbortSignal` costs microseconds to make.
 */
export class ExecutionStop {
  /** The first reason, except that terminate and a lost lease override any other. */
  reason: Reason | null = null;
  cancelRequested: boolean;
  terminateRequested: boolean;
  /** The worker shuts down. Kept apart from `reason`: a cancel or timeout seen first must not hide it. */
  shutdownRequested = false;
  private abort: AbortController | null = null;
  /** Why `signal` aborted (the first interrupt), once it did, whether or not it was made yet. */
  private abortReason: WorkflowInterrupt | null = null;
  private now: AbortController | null = null;
  /** Why the execution stopped at once, once it did (see `stopped()`). */
  private nowReason: WorkflowInterrupt | null = null;
  /** Behind `compensationSignal`, made when first read. */
  private undo: AbortController | null = null;

  constructor(flags: { cancelRequested: boolean; terminateRequested: boolean }) {
    this.cancelRequested = flags.cancelRequested;
    this.terminateRequested = flags.terminateRequested;
  }

  /** Aborted when the execution is interrupted (`ctx.signal`), with the first interrupt as its reason. */
  get signal(): AbortSignal {
    if (this.abort === null) {
      this.abort = new AbortController();
      // Each step running in parallel (and the user's own code) may listen: no leak warning past ten.
      setMaxListeners(0, this.abort.signal);
      if (this.abortReason !== null) this.abort.abort(this.abortReason);
    }
    return this.abort.signal;
  }

  /**
   * Aborted when the compensations must stop (`compensationStop()`: terminate, shutdown, a lost
   * lease, a store failure), with that interrupt as its reason. Not `signal`: a cancel or the run
   * timeout aborts that one, and they are why the compensations run.
   */
  get compensationSignal(): AbortSignal {
    if (this.undo === null) {
      this.undo = new AbortController();
      this.compensationAborted();
    }
    return this.undo.signal;
  }

  /** Records a stop requested from outside; returns whether the execution ends at once. */
  request(reason: Reason): boolean {
    if (this.reason === null || reason === 'terminate' || reason === 'lease-lost') this.reason = reason;
    if (reason === 'terminate') this.terminateRequested = this.cancelRequested = true;
    if (reason === 'cancel') this.cancelRequested = true;
    if (reason === 'shutdown') this.shutdownRequested = true;
    const atOnce = AT_ONCE.has(reason);
    if (atOnce && this.nowReason === null) {
      this.nowReason = new WorkflowInterrupt(reason);
      this.now?.abort(this.nowReason);
    }
    // A pause lets what runs finish and be recorded: `ctx.signal` aborts at the next ctx call (check()).
    if (reason !== 'pause') this.aborted(reason);
    this.compensationAborted();
    return atOnce;
  }

  /** Whether the execution was stopped without waiting for what runs. */
  get atOnce(): boolean {
    return this.reason !== null && AT_ONCE.has(this.reason);
  }

  /** Rejects with the interrupt once the execution must stop at once. */
  stopped(): Promise<never> {
    return new Promise<never>((_, reject) => {
      if (this.nowReason !== null) return reject(this.nowReason);
      if (this.now === null) {
        this.now = new AbortController();
        setMaxListeners(0, this.now.signal);
      }
      const signal = this.now.signal;
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  /**
   * Takes up a cancel or terminate flag and the run deadline, and throws the interrupt the execution
   * is under, if any. In replay-only mode a cancel and the deadline are what it already handles.
   */
  check(replayOnly: boolean, deadlinePassed: () => boolean): void {
    if (this.terminateRequested && this.reason === null) this.reason = 'terminate';
    if (this.cancelRequested && this.reason === null && !replayOnly) this.reason = 'cancel';
    if (this.reason === null && !replayOnly && deadlinePassed()) this.reason = 'timeout';
    if (this.reason !== null) {
      this.aborted(this.reason);
      throw new WorkflowInterrupt(this.reason);
    }
  }

  /** What stops compensations: not a cancel or a timeout (they are why it compensates). */
  compensationStop(): 'terminate' | 'shutdown' | 'lease-lost' | 'store-error' | null {
    if (this.terminateRequested) return 'terminate';
    if (this.shutdownRequested) return 'shutdown';
    const reason = this.reason;
    return reason === 'shutdown' || reason === 'lease-lost' || reason === 'store-error' ? reason : null;
  }

  /** `compensationSignal`, once made, aborts when the compensations must stop. */
  private compensationAborted(): void {
    if (this.undo === null || this.undo.signal.aborted) return;
    const stop = this.compensationStop();
    if (stop !== null) this.undo.abort(new WorkflowInterrupt(stop));
  }

  /** `signal` aborts with the first interrupt (now, or when it is made). */
  private aborted(reason: Reason): void {
    if (this.abortReason !== null) return;
    this.abortReason = new WorkflowInterrupt(reason);
    this.abort?.abort(this.abortReason);
  }
}
