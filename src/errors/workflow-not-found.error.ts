import { WorkflowError } from './workflow.error.js';

/** No instance has the given id (it never existed, or was deleted or purged). */
export class WorkflowNotFoundError extends WorkflowError {}
