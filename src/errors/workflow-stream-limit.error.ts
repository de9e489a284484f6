import { WorkflowError } from './workflow.error.js';

/**
 * A stream write went past a stream limit: one value larger than `maxValueBytes`, or a stream
 * holding more than `maxValues` values or `maxBytes` of them. Nothing of the write was stored.
 * Stream limits are beside the journal's (`journal.maxEntries`, `maxBytes`): stream values never
 * count in the journal.
 */
export class WorkflowStreamLimitError extends WorkflowError {}
