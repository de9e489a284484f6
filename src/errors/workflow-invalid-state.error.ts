import { WorkflowError } from './workflow.error.js';

/** An operator action that the instance's status does not allow (retrying a running instance, deleting an unfinished one). */
export class WorkflowInvalidStateError extends WorkflowError {}
