import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import type { WorkflowEvents } from '../events/workflow-events.js';
import type { WorkflowObserver } from '../engine/workflow-observer.js';
import type { WorkflowRuntime } from '../runtime/workflow-runtime.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowPausedWorkflow } from '../storage/workflow-store-pauses.js';
import {
  checkResumeOptions,
  parsePauseRequest,
  parsePauseTarget,
  pauseRefused,
  type WorkflowPauseOptions,
  type WorkflowPauseWorkflowOptions,
} from './pause-request.js';

/** What `WorkflowClient`'s pauses need of it. */
export interface InstancePausesDeps {
  storage: WorkflowStorage;
  runtime: WorkflowRuntime;
  events: WorkflowEvents;
  observer: WorkflowObserver;
  now(): number;
  /** A workflow's name from a `@Workflow` class (the registry's), or the name given. */
  workflowName(workflow: unknown): unknown;
}

/**
 * `WorkflowClient`'s pause and resume of instances and workflows: each checks its arguments, makes
 * one store call, and reads the instance only to say why a call changed nothing or to name it in
 * its event (`workflow-paused`, `workflow-resumed` with `unpaused: true`).
 */
export class InstancePauses {
  constructor(private readonly deps: InstancePausesDeps) {}

  async pause(id: string, reason: string | undefined, options: WorkflowPauseOptions | undefined): Promise<void> {
    const { runtime, events, now } = this.deps;
    const request = parsePauseRequest(reason, options, now());
    this.deps.observer.operatorAction?.('pause', id);
    const accepted = await runtime.pause(id, request, options?.transaction);
    const current = await this.read(id);
    if (!accepted) {
      const refused = pauseRefused(current, true);
      if (refused) throw refused;
      return;
    }
    events.emit({ ...eventBase(current, request.now), type: 'workflow-paused', reason: request.reason });
  }

  async resume(id: string, options: WorkflowPauseOptions | undefined): Promise<void> {
    const { runtime, events, now } = this.deps;
    checkResumeOptions(options);
    const at = now();
    this.deps.observer.operatorAction?.('resume', id);
    const accepted = await runtime.resume(id, at, options?.transaction);
    const current = await this.read(id);
    if (!accepted) {
      const refused = pauseRefused(current, false);
      if (refused) throw refused;
      return;
    }
    events.emit({ ...eventBase(current, at), type: 'workflow-resumed', run: current.runs, unpaused: true });
  }

  async pauseWorkflow(
    workflow: unknown,
    options: (WorkflowPauseWorkflowOptions & { reason?: string }) | undefined,
  ): Promise<void> {
    const target = parsePauseTarget(this.deps.workflowName(workflow), options, 'pauseWorkflow()');
    this.deps.observer.operatorAction?.('pause-workflow', null, target.workflow);
    await this.deps.runtime.pauseWorkflow(
      target,
      { reason: options?.reason ?? null, now: this.deps.now() },
      options?.transaction,
    );
  }

  async resumeWorkflow(workflow: unknown, options: WorkflowPauseWorkflowOptions | undefined): Promise<void> {
    const target = parsePauseTarget(this.deps.workflowName(workflow), options, 'resumeWorkflow()');
    this.deps.observer.operatorAction?.('resume-workflow', null, target.workflow);
    await this.deps.runtime.resumeWorkflow(target, options?.transaction);
  }

  pausedWorkflows(): Promise<WorkflowPausedWorkflow[]> {
    return this.deps.storage.pausedWorkflows();
  }

  private async read(id: string): Promise<WorkflowInstance> {
    const instance = await this.deps.storage.get(id, { readable: true });
    if (!instance) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
    return instance;
  }
}

function eventBase(instance: WorkflowInstance, at: number) {
  return { id: instance.id, workflow: instance.workflow, version: instance.version, at };
}
