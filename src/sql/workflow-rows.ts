import { wellFormedJson } from '../storage/well-formed-json.js';
import { parseSignalTopic } from './signal-topic.js';
import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  type SerializedWorkflowError,
  type WorkflowInstance,
  type WorkflowParentClose,
  type WorkflowStatus,
  type WorkflowWait,
} from '../storage/workflow-instance.js';
import type {
  WorkflowLeaseFlags,
  WorkflowScheduleRecord,
  WorkflowSignalRecord,
  WorkflowUndeclaredDue,
} from '../storage/workflow-store.js';

/** A row as a driver hands it over. */
export type SqlRow = Record<string, unknown>;

/**
 * A payload as the SQL stores keep it: JSON text in a `json` (not `jsonb`) or text column, so key
 * order and `null` versus a missing field come back exactly as they went in. `undefined` (which JSON
 * can't carry) is stored as SQL `NULL`, read back as `null`.
 */
export function toJson(value: unknown): string | null {
  if (value === undefined) return null;
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? (text as unknown as null) : wellFormedJson(text);
}

/** The inverse of `toJson()`: SQL `NULL` is `null`. Accepts a driver's already-parsed value too. */
export function fromJson(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? JSON.parse(value) : value;
}

/** Epoch milliseconds (or a count) from a `bigint` column, which drivers hand over as a string. */
export function toNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

export function toNullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : toNumber(value);
}

/** A boolean column (PostgreSQL's `boolean`, MySQL's `0`/`1`). */
export function toBoolean(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

export function toNullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/**
 * An instance from a row whose columns are named as in the migrations (`workflow`, `wake_at`...),
 * with the JSON columns as text.
 */
export function toInstance(row: SqlRow): WorkflowInstance {
  const instance: WorkflowInstance = {
    id: String(row.id),
    workflow: String(row.workflow),
    version: toNumber(row.version),
    status: row.status as WorkflowStatus,
    input: fromJson(row.input),
    output: fromJson(row.output),
    error: fromJson(row.error) as SerializedWorkflowError | null,
    customStatus: fromJson(row.custom_status),
    parentId: toNullableString(row.parent_id),
    parentClose: toNullableString(row.parent_close) as WorkflowParentClose | null,
    concurrencyKey: toNullableString(row.concurrency_key),
    rateLimitKey: toNullableString(row.rate_limit_key),
    priority: toNumber(row.priority),
    scheduleId: toNullableString(row.schedule_id),
    scheduledAt: toNullableNumber(row.scheduled_at),
    deadline: toNullableNumber(row.deadline),
    timeout: toNullableNumber(row.run_timeout),
    wakeAt: toNullableNumber(row.wake_at),
    runs: toNumber(row.runs),
    signalCursor: toNumber(row.signal_cursor),
    leaseToken: toNullableString(row.lease_token),
    leaseOwner: toNullableString(row.lease_owner),
    leaseUntil: toNullableNumber(row.lease_until),
    cancelRequested: toBoolean(row.cancel_requested),
    terminateRequested: toBoolean(row.terminate_requested),
    cancelReason: toNullableString(row.cancel_reason),
    // A store without the column (an older schema) has no trace context to give.
    traceContext:
      row.trace_context === undefined ? null : (fromJson(row.trace_context) as Record<string, string> | null),
    createdAt: toNumber(row.created_at),
    updatedAt: toNumber(row.updated_at),
  };
  // Only reads select `paused` (PAUSE_COLUMNS): an unfinished paused instance shows as `paused`.
  if (row.paused !== undefined && toBoolean(row.paused) && !FINISHED_STATUSES.includes(instance.status)) {
    instance.status = PAUSED_STATUS;
    instance.pauseReason = toNullableString(row.pause_reason);
  }
  // Only forks carry it (see `WorkflowInstance.forkedFrom`).
  if (row.forked_from !== null && row.forked_from !== undefined)
    instance.forkedFrom = { id: String(row.forked_from), step: toNullableString(row.forked_from_step) };
  return instance;
}

/** The columns reads add to an instance's for `toInstance()` to show a pause (migration 0007 / 0005 / 0002). */
export function pauseColumns(alias?: string): string {
  const a = alias ? `${alias}.` : '';
  return `${a}paused, ${a}pause_reason`;
}

/**
 * The waits an instance row's `wait_topics` stand for, in order: an array of `signalTopic()`s
 * (PostgreSQL's `text[]`), or the same array as JSON text (MySQL).
 */
export function toWaits(value: unknown): WorkflowWait[] {
  const topics = typeof value === 'string' ? JSON.parse(value) : value;
  if (!Array.isArray(topics)) return [];
  return topics.map((topic) => parseSignalTopic(String(topic)));
}

export function toSchedule(row: SqlRow): WorkflowScheduleRecord {
  return {
    id: String(row.id),
    workflow: String(row.workflow),
    declared: toBoolean(row.declared),
    spec: fromJson(row.spec),
    input: fromJson(row.input),
    paused: toBoolean(row.paused),
    wakeAt: toNullableNumber(row.wake_at),
    state: fromJson(row.state),
    revision: toNumber(row.revision),
    leaseToken: toNullableString(row.lease_token),
    leaseOwner: toNullableString(row.lease_owner),
    leaseUntil: toNullableNumber(row.lease_until),
    createdAt: toNumber(row.created_at),
    updatedAt: toNumber(row.updated_at),
  };
}

export function toSignal(row: SqlRow): WorkflowSignalRecord {
  return {
    id: toNumber(row.id),
    name: String(row.name),
    key: toNullableString(row.key),
    payload: fromJson(row.payload),
    createdAt: toNumber(row.created_at),
  };
}

/** A renewal's row (`cancel_requested`, `terminate_requested`) as lease flags; no row, `null` (the lease is gone). */
export function toLeaseFlags(row: SqlRow | undefined): WorkflowLeaseFlags | null {
  if (!row) return null;
  const flags: WorkflowLeaseFlags = {
    cancelRequested: toBoolean(row.cancel_requested),
    terminateRequested: toBoolean(row.terminate_requested),
  };
  // A renewal that reads `paused` tells the holder of a pause (absent: not paused).
  if (row.paused !== undefined && toBoolean(row.paused)) flags.paused = true;
  return flags;
}

/** A row of `countUndeclaredDue()` (`workflow`, `version`, `count`). */
export function toUndeclaredDue(row: SqlRow): WorkflowUndeclaredDue {
  return { workflow: String(row.workflow), version: Number(row.version), count: Number(row.count) };
}
