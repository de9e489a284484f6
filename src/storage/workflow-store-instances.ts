// The instances' side of `WorkflowStore`: what its calls on instances take and return.
import type {
  SerializedWorkflowError,
  WorkflowInstance,
  WorkflowJournalEntry,
  WorkflowParentClose,
  WorkflowStatus,
  WorkflowWait,
} from './workflow-instance.js';
import type { WorkflowLease } from './workflow-lease.js';
import type { WorkflowForkOrigin } from './workflow-instance.js';
import type { NewWorkflowSignal } from './workflow-store-signals.js';

/** `get()`'s result, and `WorkflowClient.getStatus()`'s. */
export interface WorkflowInstanceDetails extends WorkflowInstance {
  /** The signals it waits for while suspended in `waitForSignal()`. */
  waits: WorkflowWait[];
  /** With `getStatus(id, { children: true })`: the instances it started as children, oldest first. */
  children?: WorkflowInstance[];
  /** With `{ journal: true }`: its entries in first-write order. */
  journal?: WorkflowJournalEntry[];
}

export interface NewWorkflowInstance {
  id: string;
  workflow: string;
  version: number;
  input: unknown;
  parentId?: string | null;
  parentClose?: WorkflowParentClose | null;
  concurrencyKey?: string | null;
  rateLimitKey?: string | null;
  /** Lower goes first. Default 0. */
  priority?: number;
  scheduleId?: string | null;
  scheduledAt?: number | null;
  /** When its run timeout passes, or `null`. */
  deadline: number | null;
  /** The run timeout in ms that `deadline` was counted with, or `null` (the default): see `WorkflowInstance.timeout`. */
  timeout?: number | null;
  /** When it is first due (`start({ startAt })`); default `now`. */
  wakeAt?: number;
  /** The trace context to store with it (see `WorkflowInstance.traceContext`). Default `null`. */
  traceContext?: Record<string, string> | null;
  /** `createdAt` and `updatedAt`. The instance also gets `signalCursor` = the last signal id, `runs` 0, no lease, no flags. */
  now: number;
  /**
   * Start it claimed, for the worker that creates it (a local start with a free slot): status
   * `running`, `runs` 1 and this lease, as if `claim()` had leased it, so it runs without a claim's
   * round trip; its `signalCursor` is then the execution's signal cursor. Applies only when the call
   * creates the instance (an existing one is returned unchanged). Not passed to `createInTransaction()`.
   */
  lease?: WorkflowLease;
  /**
   * A debounced start (`start(..., { debounce })`): see `WorkflowStore.create()`. Its `wakeAt` is
   * the start's now + period; its `id` a new one, used only when the call creates an instance.
   */
  debounce?: NewInstanceDebounce;
}

/**
 * What makes a create debounced: the key that, with the workflow's name, names the burst, and the
 * longest the burst's first start may be put off (`null`: no bound).
 */
export interface NewInstanceDebounce {
  key: string;
  /** In ms, at least the period (`wakeAt - now`), or `null`. */
  maxWait: number | null;
}

export interface WorkflowCancelRequest {
  reason: string | null;
  now: number;
  /** Stop without compensating. */
  terminate: boolean;
}

export interface WorkflowLeaseFlags {
  cancelRequested: boolean;
  terminateRequested: boolean;
  /** An operator paused it (`pause()`): the execution stops at its next step and hands it back. Absent: not paused. */
  paused?: boolean;
}

export interface WorkflowListQuery {
  /** Any of these (never empty when given). */
  status?: WorkflowStatus[];
  workflow?: string;
  version?: number;
  parentId?: string;
  scheduleId?: string;
  /** Only ids that start with this (never empty when given). */
  idPrefix?: string;
  /** Only instances with `createdAt >= createdFrom` (epoch ms). */
  createdFrom?: number;
  /** Only instances with `createdAt < createdBefore` (epoch ms). */
  createdBefore?: number;
  /**
   * Keyset paging: only instances strictly after this position in the order, i.e. with
   * `(createdAt, id)` above it (`order: 'asc'`) or below it (`'desc'`). Usually the last instance
   * of the previous page.
   */
  after?: WorkflowListPosition;
  /** `'asc'` (default): oldest first. `'desc'`: newest first. */
  order?: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** A place in `list()`'s order: an instance's `createdAt` and `id`. */
export interface WorkflowListPosition {
  createdAt: number;
  id: string;
}

export interface WorkflowReopen {
  /** The write applies only while the instance still has this status and run count. */
  expect: { status: WorkflowStatus; runs: number };
  /** `pending` to run again; `compensating` to retry its compensations. */
  status: 'pending' | 'compensating';
  error: SerializedWorkflowError | null;
  /** A new deadline; `undefined` keeps the old one. */
  deadline?: number | null;
  entries: WorkflowJournalEntry[];
  /**
   * A signal to delete with the reopen, if stored: the one with this `name` and `dedupeId`. A child
   * instance's end (`$child-ended`, deduplicated by the child's id) is retracted so: its parent then
   * waits for the end the reopened child comes to, which is stored anew instead of deduplicated.
   */
  retractSignal?: { name: string; dedupeId: string };
  /**
   * The children whose ends the reopened instance will wait for: it started them and its reopened
   * journal holds no end of theirs. The reopen lands only while each of them exists and is
   * unfinished or has its end (the `$child-ended` signal keyed by its id) stored; otherwise it
   * changes nothing and returns `false`. Default: none.
   */
  awaitedChildren?: readonly string[];
  now: number;
}

export interface WorkflowWrite {
  now: number;
  /** Each name at most once per write. */
  entries: WorkflowJournalEntry[];
  status?: WorkflowStatus;
  output?: unknown;
  error?: SerializedWorkflowError | null;
  /** `null` clears it. */
  customStatus?: unknown;
  /** A signal recorded in this write's transaction (a child telling its parent it ended). */
  signal?: NewWorkflowSignal;
  release?: WorkflowRelease;
}

export interface WorkflowRelease {
  /** When it is next due; `null`: only a signal or a cancel wakes it. */
  wakeAt: number | null;
  /** Replaces the registered waits (`[]` clears them). */
  waits: WorkflowWait[];
  /** The execution's signal cursor: signals above it were not seen. */
  signalCursor: number;
}

export interface WorkflowPurgeQuery {
  /** Finished statuses only, at least one. */
  statuses: WorkflowStatus[];
  /**
   * The cutoff, at most one millisecond past the caller's now (`WorkflowClient.purge()` brings a
   * later one back): every rate window ending before it has ended, so none still counting is deleted.
   */
  before: number;
  /** At least 1: the most instances, signals, windows and debounce keys (each) one call deletes. */
  limit: number;
}

export interface WorkflowPurgeResult {
  instances: number;
  signals: number;
  rateLimits: number;
  /** Debounce keys whose instance has started or is gone (a key's next start makes a new instance either way). */
  debounceKeys: number;
}

/** `WorkflowStore.fork()`'s request: a new instance, where it came from, and the journal it starts with. */
export interface WorkflowFork {
  /** Created as `create()` creates (never with a `lease`). */
  instance: NewWorkflowInstance;
  from: WorkflowForkOrigin;
  /** Its journal, in the order to keep (each name once). */
  entries: WorkflowJournalEntry[];
}
