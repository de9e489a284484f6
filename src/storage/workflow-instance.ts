import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowWait } from '../signals/workflow-wait.js';

export type { SerializedWorkflowError, WorkflowWait };

/**
 * Where an instance is in its life. The first four and `paused` are unfinished; the last four are
 * final. `paused` is what reads show for an unfinished instance an operator paused
 * (`WorkflowClient.pause()`); stores keep the status it had beside the pause.
 */
export type WorkflowStatus =
  | 'pending'
  | 'running'
  | 'suspended'
  | 'paused'
  | 'compensating'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'compensation_failed';

/** Statuses a worker may still claim: the instance has not finished (a paused one shows `paused`, and is not claimed). */
export const UNFINISHED_STATUSES: readonly WorkflowStatus[] = ['pending', 'running', 'suspended', 'compensating'];

/** What reads show for a paused unfinished instance: never stored as a status. */
export const PAUSED_STATUS = 'paused' satisfies WorkflowStatus;

/** Statuses an instance ends in. */
export const FINISHED_STATUSES: readonly WorkflowStatus[] = ['completed', 'failed', 'cancelled', 'compensation_failed'];

/** What happens to an unfinished child when its parent ends. */
export type WorkflowParentClose = 'cancel' | 'terminate' | 'abandon';

/** A workflow instance as the store keeps it. Times are epoch milliseconds. */
export interface WorkflowInstance {
  id: string;
  workflow: string;
  version: number;
  status: WorkflowStatus;
  input: unknown;
  /** The value `run()` returned, once `completed`; else `null`. */
  output: unknown;
  error: SerializedWorkflowError | null;
  /** What the workflow last passed to `ctx.setStatus()`, or `null`. */
  customStatus: unknown;
  parentId: string | null;
  parentClose: WorkflowParentClose | null;
  concurrencyKey: string | null;
  rateLimitKey: string | null;
  /** Lower is claimed first. */
  priority: number;
  scheduleId: string | null;
  scheduledAt: number | null;
  /** When its run timeout passes, or `null`. */
  deadline: number | null;
  /**
   * The run timeout in ms that `deadline` was counted from its start with (`retry()` gives the
   * retried instance one of this length again), or `null`: none, or not stored (an instance
   * created before the store kept it; a retry then counts `deadline` from `createdAt`).
   */
  timeout: number | null;
  /** When it is next due, or `null` (only a signal or a cancel can wake it). */
  wakeAt: number | null;
  /** How many times it has been claimed. */
  runs: number;
  /** The last signal id when it was created: only signals above it can satisfy its waits. */
  signalCursor: number;
  leaseToken: string | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  cancelRequested: boolean;
  terminateRequested: boolean;
  cancelReason: string | null;
  /** While it shows `paused`: the reason `pause()` was given (`null`: none). Absent otherwise. */
  pauseReason?: string | null;
  /**
   * The trace context its creator passed on (W3C `traceparent` / `tracestate` headers, as the
   * telemetry layer wrote them at `start()` or at a child's start), or `null`. Every execution's
   * spans join that trace. Stored as given; the engine never reads it otherwise.
   */
  traceContext: Record<string, string> | null;
  createdAt: number;
  updatedAt: number;
  /**
   * Set on an instance made by `client.fork()`: the instance it was forked from and the step (`null`:
   * from the top). Stores leave it out of every other instance.
   */
  forkedFrom?: WorkflowForkOrigin | null;
  /** Only on reads (`getStatus()`, `list()`): payloads no configured codec could decode, and why. */
  unreadable?: WorkflowUnreadablePayloads;
}

/** Where a fork came from: the source instance's id, and the step it was forked from (`null`: from the top). */
export interface WorkflowForkOrigin {
  id: string;
  step: string | null;
}

/** What a journal entry records. Names starting with `$` are the engine's own entries. */
export type WorkflowJournalKind = 'step' | 'sleep' | 'signal' | 'child' | 'value' | 'compensation';

/**
 * One entry of an instance's journal: a step, a sleep, a signal wait, a child, a recorded value
 * (`ctx.now()`, `random()`, `uuid()`) or a compensation. Stored as one JSON document per name.
 */
export interface WorkflowJournalEntry {
  name: string;
  kind: WorkflowJournalKind;
  /**
   * `completed`: done, `value` holds the result. `failed`: done, `error` holds the final error.
   * `waiting`: parked until `wakeAt` (a sleep, a retry backoff, a wait's timeout) or a signal.
   */
  state: 'completed' | 'failed' | 'waiting';
  value?: unknown;
  error?: SerializedWorkflowError | null;
  /** Attempts made so far (steps and compensations). */
  attempts?: number;
  /** When a waiting entry is due (a sleep's end, a retry, a wait's timeout), or `null`. */
  wakeAt?: number | null;
  /** The signal a wait took (its id), so the next wait of the same name and key takes a later one. */
  signalId?: number | null;
  /** For a wait: the signal name and key it waits for. */
  signal?: WorkflowWait;
  /** For a child: its instance id. */
  childId?: string;
  /** For a step with a compensation: `true` once the compensation ran (the step must run again on a retry). */
  compensated?: boolean;
  createdAt: number;
  updatedAt: number;
}

/**
 * Set on an instance read by `getStatus()` or `list()` when some of its stored payloads could not
 * be decoded by any configured codec (a key removed too early, tampered data): those fields read as
 * `undefined`, and the worker hands the instance back until the codec is configured again.
 */
export interface WorkflowUnreadablePayloads {
  /** Why, for the first field (all usually share one cause): which codec wrote it and what to do. */
  reason: string;
  /** The codecs that wrote the unreadable payloads (`null`: stored without a codec). */
  codecIds: Array<string | null>;
  /** The unreadable fields: `input`, `output`, `error.message`, `journal.<name>.value`... */
  fields: string[];
}
