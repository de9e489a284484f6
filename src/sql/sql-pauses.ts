import type { SqlExecutor } from './sql-executor.js';
import type {
  WorkflowPausedWorkflow,
  WorkflowPauseRequest,
  WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';

/**
 * A SQL store's pauses (`WorkflowPauseStore`), each one statement on `executor`: the store's pool,
 * or the application's transaction for the `...InTransaction` methods.
 */
export interface SqlPauses {
  pause(executor: SqlExecutor, id: string, request: WorkflowPauseRequest): Promise<boolean>;
  resume(executor: SqlExecutor, id: string, now: number): Promise<boolean>;
  pauseWorkflow(executor: SqlExecutor, target: WorkflowPauseTarget, request: WorkflowPauseRequest): Promise<boolean>;
  resumeWorkflow(executor: SqlExecutor, target: WorkflowPauseTarget): Promise<boolean>;
  pausedWorkflows(executor: SqlExecutor): Promise<WorkflowPausedWorkflow[]>;
}

/** A row of `paused_workflows` as `pausedWorkflows()` returns it (version 0: every version). */
export function toPausedWorkflow(row: Record<string, unknown>): WorkflowPausedWorkflow {
  const version = Number(row.version);
  return {
    workflow: String(row.workflow),
    version: version === 0 ? null : version,
    reason: row.reason === null || row.reason === undefined ? null : String(row.reason),
    pausedAt: Number(row.paused_at),
  };
}
