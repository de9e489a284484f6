import { WorkflowError } from './workflow.error.js';

/** An instance's run timeout passed before it finished, or `handle.result({ timeout })` waited too long. */
export class WorkflowTimeoutError extends WorkflowError {}
