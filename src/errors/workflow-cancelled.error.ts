import { WorkflowError } from './workflow.error.js';

/** The instance was cancelled (`WorkflowClient.cancel()`); its compensations ran. */
export class WorkflowCancelledError extends WorkflowError {}
