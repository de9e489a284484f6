import { WorkflowError } from './workflow.error.js';

/** A SQL store's schema is missing or behind this version of the package, or its settings are invalid. */
export class WorkflowSchemaError extends WorkflowError {}
