// What `WorkflowStore.claim()` takes and returns: the claim, its concurrency and rate limits.
import type { WorkflowInstance } from './workflow-instance.js';
import type { WorkflowLease } from './workflow-lease.js';

/** At most `max` claims per `duration` milliseconds. */
export interface WorkflowRateWindow {
  max: number;
  duration: number;
}

export interface WorkflowConcurrencyLimit {
  workflow: string;
  limit: number | null;
  perKey: number | null;
}

export interface WorkflowRateLimitRule {
  workflow: string;
  limit: WorkflowRateWindow | null;
  perKey: WorkflowRateWindow | null;
}

/** The lease every claimed instance gets (a fresh `token`: every write under it presents it), granted at `now`. */
export interface WorkflowClaimRequest extends WorkflowLease {
  now: number;
  /** At least 1. */
  limit: number;
  /** The workflow versions this worker runs (at least one). */
  workflows: Array<{ name: string; version: number }>;
  limits?: WorkflowConcurrencyLimit[];
  rateLimits?: WorkflowRateLimitRule[];
  /**
   * Optional: instances the caller was told are due (the store's `listen()` named them). A store
   * may then claim just those of them it can take (due, without a live lease, of `workflows`, not
   * of a workflow with limits), up to `limit`, by key instead of searching; or ignore `ids` and
   * claim as without them. The caller claims again without `ids` unless it got every one.
   */
  ids?: string[];
}

export interface WorkflowClaim {
  instances: WorkflowInstance[];
  /** The highest signal id stored, or 0: the execution sees signals up to it. */
  lastSignalId: number;
}

/** `WorkflowStore.countUndeclaredDue()`: what it looks for. */
export interface WorkflowUndeclaredDueQuery {
  /** Count only instances due at this time already (and, with a lapsed lease, lapsed before it). */
  dueBefore: number;
  /** The workflow versions the caller declares: instances of these are not counted. */
  workflows: Array<{ name: string; version: number }>;
  /** Stop after this many instances (at least 1): the counts then add up to `cap` at most. */
  cap: number;
}

/** One workflow version's count in `WorkflowStore.countUndeclaredDue()`'s answer. */
export interface WorkflowUndeclaredDue {
  workflow: string;
  version: number;
  count: number;
}
