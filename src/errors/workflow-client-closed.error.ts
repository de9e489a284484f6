import { WorkflowError } from './workflow.error.js';

/**
 * The application is closing: a call still waiting on the client (such as `handle.result()`) was
 * given up instead of keeping the process alive. The instance itself is untouched and carries on
 * wherever a worker runs it; read it later with `getStatus()`.
 */
export class WorkflowClientClosedError extends WorkflowError {}
