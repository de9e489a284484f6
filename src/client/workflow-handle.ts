import type { WorkflowInstanceDetails } from '../storage/workflow-store.js';

/** A started instance: its id, its status, and its outcome. */
export interface WorkflowHandle<O = unknown> {
  readonly id: string;
  /** The instance as stored (`WorkflowClient.getStatus(id, options)`). */
  status(options?: { journal?: boolean; children?: boolean }): Promise<WorkflowInstanceDetails>;
  /**
   * Waits until the instance ends: its output when `completed`; otherwise its error (a
   * `WorkflowCancelledError`, `WorkflowTerminatedError`, `WorkflowTimeoutError` or the workflow's
   * own). With `timeout`, throws `WorkflowTimeoutError` when it has not ended by then (real time).
   */
  result(options?: { timeout?: number | string }): Promise<O>;
}
