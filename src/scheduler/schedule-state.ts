import type { WorkflowScheduleRecord, WorkflowScheduleSave } from '../storage/workflow-store.js';
import { cadenceOf } from './schedule-cadence.js';
import type { ScheduleSpec, WorkflowScheduleCatchup, WorkflowScheduleOverlap } from './schedule-spec.js';

/** The scheduler's bookkeeping of one schedule, stored as its `state`. */
export interface ScheduleState {
  /** The last occurrence dealt with (or when the schedule was created, changed or resumed). */
  cursor: number;
  /** The last instance it started, and the occurrence it was for. */
  lastStartedId: string | null;
  lastStartedAt: number | null;
  /** Why the scheduler could not read the schedule (it is then parked until saved again), or `null`. */
  error: string | null;
  /**
   * Occurrences of an earlier cadence that were due when the schedule was changed and had not
   * started (see `owedAtChange()`): the next pass starts them, once each, before the cadence's own.
   */
  owed: number[];
}

/** A schedule as `WorkflowSchedules.get()` and `list()` show it. Times are epoch milliseconds. */
export interface WorkflowScheduleInfo {
  id: string;
  workflow: string;
  /** Declared on `@Workflow` (managed by the code), not created with `upsert()`. */
  declared: boolean;
  cron: string | null;
  /** Milliseconds. */
  every: number | null;
  timezone: string | null;
  overlap: WorkflowScheduleOverlap;
  catchup: WorkflowScheduleCatchup;
  /** Milliseconds. */
  catchupWindow: number;
  input: unknown;
  paused: boolean;
  /** When its next occurrence is due; `null` while paused or when none comes. */
  nextAt: number | null;
  /** The last instance it started (`<id>@<ISO time>`) and that occurrence's time. */
  lastStartedId: string | null;
  lastStartedAt: number | null;
  /** Why the scheduler parked it (a stored spec it could not read), or `null`. */
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The state as stored, or a fresh one whose cursor is `fallback` (a row without state). */
export function readScheduleState(stored: unknown, fallback: number): ScheduleState {
  const state = (stored ?? {}) as Partial<ScheduleState>;
  return {
    cursor: typeof state.cursor === 'number' && Number.isFinite(state.cursor) ? state.cursor : fallback,
    lastStartedId: typeof state.lastStartedId === 'string' ? state.lastStartedId : null,
    lastStartedAt: typeof state.lastStartedAt === 'number' ? state.lastStartedAt : null,
    error: typeof state.error === 'string' ? state.error : null,
    owed: Array.isArray(state.owed) ? state.owed.filter((at) => typeof at === 'number' && Number.isFinite(at)) : [],
  };
}

/** The id of the instance an occurrence starts: `<scheduleId>@<ISO time>`, the same in every process. */
export function occurrenceId(scheduleId: string, at: number): string {
  return `${scheduleId}@${new Date(at).toISOString()}`;
}

/**
 * The save of a schedule with these contents. The cadence restarts from `cursor` (occurrences
 * strictly after it are due), an owed occurrence makes it due at once, and a paused schedule is
 * due never (`wakeAt` null).
 */
export function scheduleSave(input: {
  id: string;
  workflow: string;
  declared: boolean;
  spec: ScheduleSpec;
  input: unknown;
  paused: boolean;
  state: ScheduleState;
  expectRevision: number | null;
  now: number;
}): WorkflowScheduleSave {
  return {
    id: input.id,
    workflow: input.workflow,
    declared: input.declared,
    spec: input.spec,
    input: input.input ?? null,
    paused: input.paused,
    wakeAt: input.paused ? null : (input.state.owed[0] ?? cadenceOf(input.spec).after(input.state.cursor)),
    state: input.state,
    expectRevision: input.expectRevision,
    // Whoever holds the lease worked from the old contents: its next write must not land.
    releaseLease: input.expectRevision !== null,
    now: input.now,
  };
}

/** The public view of a stored schedule whose spec has been read. */
export function scheduleInfo(record: WorkflowScheduleRecord, spec: ScheduleSpec | null): WorkflowScheduleInfo {
  const state = readScheduleState(record.state, record.createdAt);
  return {
    id: record.id,
    workflow: record.workflow,
    declared: record.declared,
    cron: spec?.cron ?? null,
    every: spec?.every ?? null,
    timezone: spec?.timezone ?? null,
    overlap: spec?.overlap ?? 'skip',
    catchup: spec?.catchup ?? 'latest',
    catchupWindow: spec?.catchupWindow ?? 0,
    input: record.input,
    paused: record.paused,
    nextAt: record.paused ? null : record.wakeAt,
    lastStartedId: state.lastStartedId,
    lastStartedAt: state.lastStartedAt,
    error: state.error,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
