import type { SerializedWorkflowError } from './serialized-workflow-error.js';
import { WorkflowError } from './workflow.error.js';

/** A child instance ended as `failed`, `cancelled` or `compensation_failed`; `childError` is its error. */
export class WorkflowChildFailedError extends WorkflowError {
  constructor(
    message: string,
    readonly childId: string,
    readonly childError: SerializedWorkflowError | null,
  ) {
    super(message);
  }
}
