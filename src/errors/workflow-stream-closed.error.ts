import { WorkflowError } from './workflow.error.js';

/** A write to a stream that was closed (`close()` is for good); nothing was stored. */
export class WorkflowStreamClosedError extends WorkflowError {}
