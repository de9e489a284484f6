import { WorkflowInterrupt } from '../errors/workflow-interrupt.js';

type Reason = WorkflowInterrupt['reason'];

/** Reasons that end an execution without waiting for what runs: whatever runs after is never recorded. */
const AT_ONCE: ReadonlySet<Reason> = new Set<Reason>(['terminate', 'lease-lost', 'store-error']);

/**
 * Why one execution is being stopped, and the two signals that carry it: `abort` (what `ctx.signal`
 * and running steps see) and the stop-at-once signal that `stopped()` turns into a rejection, for
 * work nothing waits out (a compensation running when a terminate comes).
 */
export class ExecutionStop {
  /** The first reason, except that terminate and a lost lease override any other. */
  reason: Reason | null = null;
  cancelRequested: boolean;
  terminateRequested: boolean;
  /** The worker shuts down. Kept apart from `reason`: a cancel or timeout seen first must not hide it. */
  shutdownRequested = false;
  readonly abort = new AbortController();
  private readonly now = new AbortController();

  constructor(flags: { cancelRequested: boolean; terminateRequested: boolean }) {
    this.cancelRequested = flags.cancelRequested;
    this.terminateRequested = flags.terminateRequested;
  }

  /** Records a stop requested from outside; returns whether the execution ends at once. */
  request(reason: Reason): boolean {
    if (this.reason === null || reason === 'terminate' || reason === 'lease-lost') this.reason = reason;
    if (reason === 'terminate') this.terminateRequested = this.cancelRequested = true;
    if (reason === 'cancel') this.cancelRequested = true;
    if (reason === 'shutdown') this.shutdownRequested = true;
    if (AT_ONCE.has(reason)) this.now.abort(new WorkflowInterrupt(reason));
    if (!this.abort.signal.aborted) this.abort.abort(new WorkflowInterrupt(reason));
    return AT_ONCE.has(reason);
  }

  /** Whether the execution was stopped without waiting for what runs. */
  get atOnce(): boolean {
    return this.reason !== null && AT_ONCE.has(this.reason);
  }

  /** Rejects with the interrupt once the execution must stop at once. */
  stopped(): Promise<never> {
    return new Promise<never>((_, reject) => {
      const signal = this.now.signal;
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
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
      if (!this.abort.signal.aborted) this.abort.abort(new WorkflowInterrupt(this.reason));
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
}
