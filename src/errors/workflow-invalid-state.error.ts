import { WorkflowError } from './workflow.error.js';

/**
 * An operator action that the instance's status does not allow (retrying a running instance,
 * deleting an unfinished one), or a call the module's own state does not allow yet (`drain()`
 * before the application's `init()`).
 */
export class WorkflowInvalidStateError extends WorkflowError {}
