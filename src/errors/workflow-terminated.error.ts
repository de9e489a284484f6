import { WorkflowError } from './workflow.error.js';

/** The instance was terminated (`WorkflowClient.terminate()`); its compensations did not run. */
export class WorkflowTerminatedError extends WorkflowError {}
