import { WorkflowError } from './workflow.error.js';

/** `ctx.waitForCallback()`: the callback's `timeout` passed before it was completed or failed. */
export class WorkflowCallbackTimeoutError extends WorkflowError {}
