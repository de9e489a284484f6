import { compareIds } from './in-memory-list.js';
import { FINISHED_STATUSES, PAUSED_STATUS, type WorkflowInstance } from '../storage/workflow-instance.js';
import {
  EVERY_VERSION,
  type WorkflowPausedWorkflow,
  type WorkflowPauseRequest,
  type WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';

/**
 * The pauses of `InMemoryWorkflowStore`: of instances, kept by the stored object itself (a
 * deleted instance's pause goes with it, and a new instance under the same id starts unpaused),
 * and of workflows, by name and version (`EVERY_VERSION` for all).
 */
export class InMemoryPauses {
  private readonly instances = new WeakMap<WorkflowInstance, { reason: string | null }>();
  /** How many instances are paused, so the hot paths skip every check while none is. */
  private pausedInstances = 0;
  private readonly workflows = new Map<string, WorkflowPausedWorkflow>();

  /** Whether nothing is paused at all: claims and counts then look at nothing here. */
  get none(): boolean {
    return this.pausedInstances === 0 && this.workflows.size === 0;
  }

  pause(instance: WorkflowInstance, request: WorkflowPauseRequest): boolean {
    if (FINISHED_STATUSES.includes(instance.status) || this.instances.has(instance)) return false;
    this.instances.set(instance, { reason: request.reason });
    this.pausedInstances += 1;
    instance.updatedAt = request.now;
    return true;
  }

  /** Lifts the pause of `instance`, if it has one; `now`, when given, becomes its `updatedAt`. */
  resume(instance: WorkflowInstance, now?: number): boolean {
    if (!this.instances.delete(instance)) return false;
    this.pausedInstances -= 1;
    if (now !== undefined) instance.updatedAt = now;
    return true;
  }

  /** Whether `instance` is paused and unfinished, so it shows as `paused`. */
  isPaused(instance: WorkflowInstance): boolean {
    return this.pausedInstances > 0 && this.instances.has(instance) && !FINISHED_STATUSES.includes(instance.status);
  }

  /** Whether a claim may take `instance`: neither it nor its workflow (version) is paused. */
  claimable(instance: WorkflowInstance): boolean {
    if (this.none) return true;
    return !this.isPaused(instance) && !this.workflowPaused(instance.workflow, instance.version);
  }

  /** `copy` (a copy of `stored`) as reads show it: `paused`, with its reason, while `stored` is paused and unfinished. */
  shown(stored: WorkflowInstance, copy: WorkflowInstance): WorkflowInstance {
    if (!this.isPaused(stored)) return copy;
    copy.status = PAUSED_STATUS;
    copy.pauseReason = this.instances.get(stored)!.reason;
    return copy;
  }

  workflowPaused(workflow: string, version: number): boolean {
    return (
      this.workflows.size > 0 &&
      (this.workflows.has(workflowKey({ workflow, version: null })) ||
        this.workflows.has(workflowKey({ workflow, version })))
    );
  }

  pauseWorkflow(target: WorkflowPauseTarget, request: WorkflowPauseRequest): boolean {
    const key = workflowKey(target);
    if (this.workflows.has(key)) return false;
    this.workflows.set(key, { ...target, reason: request.reason, pausedAt: request.now });
    return true;
  }

  resumeWorkflow(target: WorkflowPauseTarget): boolean {
    return this.workflows.delete(workflowKey(target));
  }

  pausedWorkflows(): WorkflowPausedWorkflow[] {
    return [...this.workflows.values()]
      .map((pause) => ({ ...pause }))
      .sort(
        (a, b) => compareIds(a.workflow, b.workflow) || (a.version ?? EVERY_VERSION) - (b.version ?? EVERY_VERSION),
      );
  }
}

function workflowKey(target: WorkflowPauseTarget): string {
  return JSON.stringify([target.workflow, target.version ?? EVERY_VERSION]);
}
