import type { WorkflowScheduleEvent } from '../events/workflow-event.js';
import { PAUSED_STATUS, UNFINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowScheduleStorage } from '../storage/workflow-schedule-storage.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { occurrenceId } from './schedule-state.js';
import type { WorkflowScheduleOverlap } from './schedule-spec.js';

/** The store operations a schedule's starts use (`WorkflowStorage` has them). */
export type ScheduleStartStorage = Pick<WorkflowStorage, 'list' | 'requestCancel'> & {
  readonly schedules: Pick<WorkflowScheduleStorage, 'createOccurrence'>;
};

/** The workflow a schedule starts, at the newest version this process runs. */
export interface ScheduledWorkflow {
  name: string;
  version: number;
  /** Run timeout in ms, or `null`. */
  timeout: number | null;
  priority: number;
}

export interface ScheduleStartDeps {
  storage: ScheduleStartStorage;
  clock: WorkflowClock;
  emit(event: WorkflowScheduleEvent): void;
  /** An instance was created: the local worker may run it at once. */
  started(instance: WorkflowInstance): void;
  /** A cancel was accepted: an execution of it running in this process stops now. */
  cancelled(id: string): void;
}

export interface ScheduleOccurrence {
  scheduleId: string;
  workflow: ScheduledWorkflow;
  input: unknown;
  at: number;
  overlap: WorkflowScheduleOverlap;
  /** `WorkflowSchedules.trigger()`, outside the cadence. */
  triggered: boolean;
  /**
   * The scheduler's lease token on the schedule: the instance is created only while it still holds
   * the lease, live (`WorkflowStore.createOccurrence()`). Absent for `trigger()`, which holds none:
   * its instance is created only while the schedule exists.
   */
  leaseToken?: string;
  /** For `trigger()`: the schedule's revision it read; the instance is created only while the schedule is still at it. */
  revision?: number;
}

/**
 * What one occurrence did: started an instance, found it started already (by another process), was
 * skipped, or started nothing because the schedule's lease was gone (a pause, a change or a delete
 * released it, another process took it over, or it lapsed): the caller then stops serving the
 * schedule. For `trigger()`, `lost` means the schedule was deleted or changed since it was read.
 */
export type OccurrenceOutcome =
  { kind: 'started' | 'existed' | 'lost'; id: string } | { kind: 'skipped'; id: string; running: string };

/**
 * Starts the instance of one occurrence, `<scheduleId>@<ISO time>`, applying `overlap` to the
 * schedule's unfinished instances. The id makes the start idempotent: however many processes
 * (or stale lease holders) get here for one occurrence, the store creates one instance. Under a
 * lease, the create lands only while the lease is held and live, and `cancel-previous` cancels only after
 * it landed: a pause, change or delete that released the lease first leaves the running instances
 * alone and starts nothing.
 */
export async function startOccurrence(
  deps: ScheduleStartDeps,
  occurrence: ScheduleOccurrence,
): Promise<OccurrenceOutcome> {
  const { storage, clock } = deps;
  const { scheduleId, workflow, at, leaseToken } = occurrence;
  const id = occurrenceId(scheduleId, at);
  let unfinished: WorkflowInstance[] = [];
  if (occurrence.overlap !== 'allow') {
    unfinished = (
      await storage.list({ scheduleId, status: [...UNFINISHED_STATUSES, PAUSED_STATUS], limit: 1000, offset: 0 })
    ).filter((i) => i.id !== id);
    if (unfinished.length > 0 && occurrence.overlap === 'skip') {
      deps.emit({
        type: 'schedule-skipped',
        scheduleId,
        workflow: workflow.name,
        at: clock.now(),
        scheduledAt: at,
        reason: 'overlap',
        running: unfinished[0]!.id,
      });
      return { kind: 'skipped', id, running: unfinished[0]!.id };
    }
  }
  // Read after every await that comes before the create: the store takes the lease as live only
  // at this time, so a holder that stalled past its lease on the way (a slow read, an event-loop
  // block, a GC pause) starts nothing it planned before the stall.
  const now = clock.now();
  const init = {
    id,
    workflow: workflow.name,
    version: workflow.version,
    input: occurrence.input ?? null,
    priority: workflow.priority,
    scheduleId,
    scheduledAt: at,
    deadline: workflow.timeout === null ? null : now + workflow.timeout,
    timeout: workflow.timeout,
    now,
  };
  const result = await storage.schedules.createOccurrence(scheduleId, leaseToken ?? null, init, occurrence.revision);
  if (!result) return { kind: 'lost', id };
  for (const previous of unfinished) {
    // Only earlier runs: going over an occurrence again (after a process died before recording its
    // starts) must not cancel the later ones it started already.
    // Also when the instance existed: a process that died between its create and these cancels left them to do.
    if (previous.scheduledAt !== null && previous.scheduledAt > at) continue;
    const reason = `Schedule "${scheduleId}" started ${id} (overlap: 'cancel-previous').`;
    if (await storage.requestCancel(previous.id, { reason, now, terminate: false })) deps.cancelled(previous.id);
  }
  if (!result.created) return { kind: 'existed', id };
  deps.started(result.instance);
  deps.emit({
    type: 'schedule-fired',
    scheduleId,
    workflow: workflow.name,
    at: now,
    scheduledAt: at,
    instanceId: id,
    triggered: occurrence.triggered,
  });
  return { kind: 'started', id };
}
