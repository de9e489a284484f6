import { WorkflowError } from './workflow.error.js';

/** The workflow's code no longer matches an instance's journal: ship such changes as a new version. */
export class WorkflowNonDeterminismError extends WorkflowError {}
