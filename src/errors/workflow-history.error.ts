import { WorkflowError } from './workflow.error.js';

/**
 * A value given as a workflow history (to `replayHistory()`, or read from a file by the CLI) is not
 * one `exportHistory()` made: not an object, another format, or a field of the wrong type. The
 * message names the field and says how to get a valid history.
 */
export class WorkflowHistoryError extends WorkflowError {}
