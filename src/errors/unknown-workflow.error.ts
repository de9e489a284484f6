import { WorkflowError } from './workflow.error.js';

/** A workflow name or version that no `@Workflow` provider of this application declares. */
export class UnknownWorkflowError extends WorkflowError {}
