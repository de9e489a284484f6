import { WorkflowError } from './workflow.error.js';

/**
 * `start()` with an id that an instance of another workflow, or with another input, already has.
 * Starting the same workflow with the same input returns the existing instance instead.
 */
export class WorkflowAlreadyStartedError extends WorkflowError {
  constructor(
    message: string,
    readonly instanceId: string,
  ) {
    super(message);
  }
}
