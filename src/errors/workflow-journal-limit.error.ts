import { WorkflowError } from './workflow.error.js';

/** An instance's journal reached the module's `journal.maxEntries` or `journal.maxBytes`. */
export class WorkflowJournalLimitError extends WorkflowError {}
