import { WorkflowError } from './workflow.error.js';

/** `ctx.waitForSignal()` reached its timeout before a matching signal came. Catch it to go on without one. */
export class WorkflowSignalTimeoutError extends WorkflowError {}
