import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';

// The errors the engine ends an instance with when it was stopped rather than failing by itself.

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
