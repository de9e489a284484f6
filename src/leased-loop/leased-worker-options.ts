import type { WorkflowLease } from '../storage/workflow-lease.js';
import type { WorkflowClock } from '../time/workflow-clock.js';

/** How a leased worker paces itself (milliseconds, but `concurrency`). */
export interface LeasedWorkerTimings {
  /** Items executed at once. */
  concurrency: number;
  pollInterval: number;
  leaseDuration: number;
  heartbeatInterval: number;
  shutdownTimeout: number;
}

export interface LeasedWorkerOptions<T> extends LeasedWorkerTimings {
  owner?: string;
  clock: WorkflowClock;
  /**
   * Leases up to `limit` due items under `lease`, granted at `now`. With `ids` (named by wake-ups),
   * it may take just those of them it can, by key.
   */
  claim(lease: WorkflowLease, now: number, limit: number, ids?: string[]): Promise<T[]>;
  /** An item's id, as wake-ups name it. Without it, named wake-ups count as plain ones. */
  idOf?(item: T): string;
  /** Extends an item's lease; `false` when it is gone. Never called for an item while a renewal of it is out. */
  renew(item: T, until: number): Promise<boolean>;
  /**
   * Runs an item to its end; `shutdown` aborts when the worker stops. Must not throw. It may call
   * `ending()` once the item's own work is over and only its last write is left to land (the
   * write that releases its lease): its slot then goes to the next item at once, so that item's
   * work overlaps that write's round trip. The item still counts as running (renewed, waited for
   * at shutdown) until `execute()` resolves.
   */
  execute(item: T, shutdown: AbortSignal, ending: () => void): Promise<void>;
  onError(error: unknown, stage: 'claim' | 'renew'): void;
  /** Shutdown stopped waiting for these items (`shutdownTimeout` passed): report and release them. */
  abandon?(items: T[]): Promise<void>;
  /** Claims ahead only while items run at most this long (ms, a moving average). Default `CLAIM_AHEAD_MAX_RUN`. */
  claimAheadMaxRun?: number;
}
