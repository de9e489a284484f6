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

/** A lifecycle or step event, emitted before the call that caused it resolves. */
export type WorkflowEvent = EventBase &
  (
    | { type: 'workflow-started' }
    | { type: 'workflow-resumed'; run: number }
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

export type WorkflowEventType = WorkflowEvent['type'];

/** An event without the fields the engine adds (`id`, `workflow`, `version`, `at`). */
export type WorkflowEventBody = WorkflowEvent extends infer E ? (E extends unknown ? Omit<E, keyof EventBase> : never) : never;
