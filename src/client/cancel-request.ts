import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowCancelRequest } from '../storage/workflow-store.js';

/** `cancel()`'s or `terminate()`'s reason, checked, as the request to store at `now`. */
export function parseCancelRequest(reason: string | undefined, terminate: boolean, now: number): WorkflowCancelRequest {
  if (reason !== undefined && typeof reason !== 'string')
    throw invalidInput(`Invalid reason: ${shownValue(reason)}. Use a string.`);
  return { reason: reason ?? null, now, terminate };
}

/** Why the store refused a cancel or terminate of `current`: it ended, was asked already, or can't be cancelled now. */
export function cancelRefused(current: WorkflowInstance, terminate: boolean): WorkflowInvalidStateError {
  const { id } = current;
  const what = terminate ? 'terminated' : 'cancelled';
  if (FINISHED_STATUSES.includes(current.status))
    return new WorkflowInvalidStateError(`Instance "${id}" is ${current.status} and can't be ${what}.`);
  if (current.terminateRequested || (!terminate && current.cancelRequested)) {
    return new WorkflowInvalidStateError(
      `Instance "${id}" was already asked to ${terminate ? 'terminate' : 'cancel'}.`,
    );
  }
  return new WorkflowInvalidStateError(
    `Instance "${id}" is ${current.status} and can't be ${what}` +
      (current.status === 'compensating' && !terminate
        ? ': it is already compensating; terminate it to stop its compensations.'
        : '.'),
  );
}
