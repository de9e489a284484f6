import { WorkflowError } from './workflow.error.js';

/** Thrown from a step: fail it now, without the retries its policy would allow. */
export class NonRetryableError extends WorkflowError {}
