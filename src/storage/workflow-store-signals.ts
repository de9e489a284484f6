// What `WorkflowStore.signal()` and `signals()` take and return.

/**
 * The engine signal a child's final write sends its parent: key and `dedupeId` the child's id,
 * payload the child's end. `purge()` keeps one while the child's parent is unfinished (see there).
 */
export const CHILD_ENDED_SIGNAL = '$child-ended';

export interface NewWorkflowSignal {
  name: string;
  /** `null`: sent without a key; matches only waits without one. */
  key: string | null;
  /** The sender's id: a signal with the same name and `dedupeId` is stored once. `null`: never deduplicated. */
  dedupeId: string | null;
  payload: unknown;
  now: number;
}

export interface WorkflowSignalResult {
  /** The stored signal's id (with `created: false`, the earlier one's). */
  id: number;
  /** Instances made due (0 with `created: false`). */
  woken: number;
  created: boolean;
  /** The stored signal's key (with `created: false`, the earlier one's). */
  key: string | null;
}

export interface WorkflowSignalQuery {
  name: string;
  key: string | null;
  afterId: number;
  upToId: number;
}

export interface WorkflowSignalRecord {
  id: number;
  name: string;
  key: string | null;
  payload: unknown;
  createdAt: number;
}

/** How many of the newest signals `untakenSignals()` looks among. */
export const UNTAKEN_SIGNALS_SCANNED = 1_000;

export interface WorkflowUntakenSignalQuery {
  /** At most this many, newest first. */
  limit: number;
}

/** A signal no instance took (see `WorkflowStore.untakenSignals()`): what an operator needs to spot a misspelt one. */
export interface WorkflowUntakenSignal {
  id: number;
  name: string;
  key: string | null;
  createdAt: number;
}
