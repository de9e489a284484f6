import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowWait } from '../signals/workflow-wait.js';

interface EventBase {
  /** The instance's id. */
  id: string;
  workflow: string;
  version: number;
  /** Epoch ms, from the engine's clock. */
  at: number;
}

/** A lifecycle or step event of one instance, emitted before the call that caused it resolves. */
export type WorkflowInstanceEvent = EventBase &
  (
    | { type: 'workflow-started' }
    /** `client.fork()` made this instance (`id`) from `from.id`, to run again from `from.step` (`null`: the top). */
    | { type: 'workflow-forked'; from: { id: string; step: string | null } }
    /**
     * An execution picked the instance up again (`run`: its run count), or, with `unpaused: true`,
     * `WorkflowClient.resume()` lifted an operator's pause (`run`: the runs so far).
     */
    | { type: 'workflow-resumed'; run: number; unpaused?: true }
    /** `WorkflowClient.pause()` paused it (emitted by the process that paused it). */
    | { type: 'workflow-paused'; reason: string | null }
    | { type: 'workflow-suspended'; wakeAt: number | null; waits: WorkflowWait[] }
    | { type: 'workflow-completed'; output: unknown }
    | { type: 'workflow-failed'; error: SerializedWorkflowError }
    | { type: 'workflow-cancelled'; error: SerializedWorkflowError }
    | { type: 'workflow-compensating'; error: SerializedWorkflowError }
    | { type: 'workflow-compensation-failed'; error: SerializedWorkflowError }
    | { type: 'step-completed'; step: string; attempt: number }
    | { type: 'step-failed'; step: string; attempt: number; error: SerializedWorkflowError }
    | { type: 'step-retrying'; step: string; attempt: number; error: SerializedWorkflowError; retryAt: number }
    | { type: 'journal-large'; entries: number; bytes: number }
  );

interface ScheduleEventBase {
  /** The schedule's id. */
  scheduleId: string;
  /** The workflow it starts. */
  workflow: string;
  /** Epoch ms, from the scheduler's clock. */
  at: number;
}

/** What a schedule did, emitted by the process that did it. */
export type WorkflowScheduleEvent = ScheduleEventBase &
  /** An occurrence (or `WorkflowSchedules.trigger()`, with `triggered`) started instance `instanceId`. */
  (
    | { type: 'schedule-fired'; scheduledAt: number; instanceId: string; triggered: boolean }
    /** An occurrence started nothing: `overlap: 'skip'` and instance `running` is unfinished. */
    | { type: 'schedule-skipped'; scheduledAt: number; reason: 'overlap'; running: string }
    /**
     * Occurrences from `missedFrom` to `missedTo` were missed (no process got to them within a
     * minute); `started` are those `catchup` started (each also has its `schedule-fired`).
     */
    | {
        type: 'schedule-caught-up';
        catchup: 'latest' | 'all' | 'none';
        missedFrom: number;
        missedTo: number;
        started: number[];
      }
  );

/** Every event `WorkflowEvents` carries: an instance's (with `id`) or a schedule's (with `scheduleId`). */
export type WorkflowEvent = WorkflowInstanceEvent | WorkflowScheduleEvent;

export type WorkflowEventType = WorkflowEvent['type'];

/** An instance event without the fields the engine adds (`id`, `workflow`, `version`, `at`). */
export type WorkflowEventBody = WorkflowInstanceEvent extends infer E
  ? E extends unknown
    ? Omit<E, keyof EventBase>
    : never
  : never;
