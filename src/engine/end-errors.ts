import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';

// The errors the engine ends an instance with when it was stopped rather than failing by itself.

/** What a `compensating` instance compensates for when no error was stored with it. */
export const UNKNOWN_FAILURE: SerializedWorkflowError = { name: 'Error', message: 'Unknown failure.' };

/** Why a cancelled instance ended (`cancel(id, reason)`). */
export function cancelled(reason: string | null): SerializedWorkflowError {
  return { name: 'WorkflowCancelledError', message: reason ?? 'Cancelled.' };
}

/** Why a terminated instance ended (`terminate(id, reason)`). */
export function terminated(reason: string | null): SerializedWorkflowError {
  return { name: 'WorkflowTerminatedError', message: reason ?? 'Terminated.' };
}

/** Why an instance past its run deadline failed. */
export function timedOutError(instance: WorkflowInstance): SerializedWorkflowError {
  return {
    name: 'WorkflowTimeoutError',
    message:
      `Instance "${instance.id}" of workflow "${instance.workflow}@${instance.version}" did not finish within its timeout ` +
      `(its deadline was ${new Date(instance.deadline!).toISOString()}).`,
  };
}

/**
 * How a `compensating` instance claimed again ends once its compensations are done: `cancelled`
 * when they are its cancel's, else `failed`. Never from the error's name alone: a workflow whose own
 * code throws a `WorkflowCancelledError` (one it got from a cancelled instance) fails. Read from the
 * stored instance, since any process may carry the compensations on: a cancel's compensations have
 * the cancel flag (kept by `retry()` of a `compensation_failed` end) and the engine's cancel error.
 */
export function endOfCompensations(instance: WorkflowInstance): 'cancelled' | 'failed' {
  return instance.cancelRequested && instance.error?.name === 'WorkflowCancelledError' ? 'cancelled' : 'failed';
}
