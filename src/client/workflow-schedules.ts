import { Inject, Injectable } from '@nestjs/common';
import type { WorkflowDefinition, WorkflowReference } from '../engine/workflow-context.js';
import { WorkflowEvents } from '../events/workflow-events.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowRuntime } from '../runtime/workflow-runtime.js';
import { WorkflowWakeUps } from '../runtime/workflow-wake-ups.js';
import { missedAfterFor } from '../scheduler/occurrence-plan.js';
import { ScheduleAdmin } from '../scheduler/schedule-admin.js';
import type { WorkflowScheduleRules } from '../scheduler/schedule-spec.js';
import type { WorkflowScheduleInfo } from '../scheduler/schedule-state.js';
import { WorkflowScheduler } from '../scheduler/workflow-scheduler.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';
import { WorkflowClient } from './workflow-client.js';
import type { WorkflowHandle } from './workflow-handle.js';

/** A schedule as `WorkflowSchedules.upsert()` takes it. */
export interface WorkflowScheduleDefinition extends WorkflowScheduleRules {
  /** The workflow it starts: a `@Workflow` class or its name (at the newest version, when each occurrence starts). */
  workflow: (abstract new (...args: never[]) => WorkflowDefinition<unknown, unknown>) | string;
  /** The input of each instance (JSON). Default `null`. */
  input?: unknown;
  /** Default false. */
  paused?: boolean;
}

export interface WorkflowScheduleListOptions {
  workflow?: string;
  /** Only declared (`true`) or only created at run time (`false`). */
  declared?: boolean;
  /** Default 100, at most 1000. */
  limit?: number;
  /** Default 0. */
  offset?: number;
}

/**
 * Schedules at run time, next to the ones declared on `@Workflow`: create or replace, read,
 * pause, resume, delete, and trigger one start now. Changes are safe while schedulers run in other
 * processes (each is a save conditional on what it read, and takes the schedule's lease away from
 * whoever held it). Declared schedules can be paused, resumed and triggered, not replaced or deleted.
 */
@Injectable()
export class WorkflowSchedules {
  private readonly admin: ScheduleAdmin;

  constructor(
    storage: WorkflowStorage,
    private readonly registry: WorkflowRegistry,
    events: WorkflowEvents,
    runtime: WorkflowRuntime,
    wakeUps: WorkflowWakeUps,
    scheduler: WorkflowScheduler,
    private readonly client: WorkflowClient,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) options: ResolvedWorkflowsOptions,
  ) {
    this.admin = new ScheduleAdmin({
      storage,
      workflow: (name) => registry.resolve(name),
      declares: (name) => registry.latest().some((workflow) => workflow.name === name),
      clock: options.clock,
      changed: () => scheduler.kick(),
      missedAfter: missedAfterFor(options.worker.leaseDuration),
      emit: (event) => events.emit(event),
      started: () => wakeUps.kick(),
      cancelled: (id) => runtime.cancelAccepted(id, false),
    });
  }

  /**
   * Creates the schedule `id`, or replaces the one created at run time with that id (every option
   * not given takes its default). A new cadence counts from now; changing only the input or the
   * rules keeps its next occurrence. An occurrence that was due and had not started yet starts
   * once, with the new definition (unless the schedule is now paused): a run has the definition
   * the schedule had when the run was stored, never both, never none. Throws a `TypeError` quoting a bad cron expression or time
   * zone, `UnknownWorkflowError` for a workflow this application doesn't declare, and
   * `WorkflowInvalidStateError` for a declared id; nothing is stored then.
   */
  async upsert(id: string, definition: WorkflowScheduleDefinition): Promise<WorkflowScheduleInfo> {
    const workflow =
      definition?.workflow === undefined
        ? undefined
        : this.registry.resolve(definition.workflow as WorkflowReference).name;
    if (workflow === undefined)
      throw new TypeError(`Schedule "${id}": pass the workflow it starts ({ workflow: MyWorkflow, ... }).`);
    return this.admin.upsert(id, { ...definition, workflow });
  }

  /** The schedule, or `null`. */
  get(id: string): Promise<WorkflowScheduleInfo | null> {
    return this.admin.get(id);
  }

  /** Schedules ordered by id: one page. */
  list(options: WorkflowScheduleListOptions = {}): Promise<WorkflowScheduleInfo[]> {
    return this.admin.list(options);
  }

  /** Stops starting instances (those running go on). Throws `WorkflowNotFoundError` for an unknown id. */
  pause(id: string): Promise<WorkflowScheduleInfo> {
    return this.admin.pause(id);
  }

  /** Starts again from the next occurrence after now; occurrences while it was paused are not caught up. */
  resume(id: string): Promise<WorkflowScheduleInfo> {
    return this.admin.resume(id);
  }

  /**
   * Deletes a schedule created at run time, or a declared one whose workflow this application no
   * longer declares; the instances it started stay. Throws `WorkflowNotFoundError` for an unknown id.
   */
  delete(id: string): Promise<void> {
    return this.admin.delete(id);
  }

  /**
   * Starts one instance now, outside the cadence (paused or not, whatever its overlap rule), with
   * id `<id>@<ISO time of now>`, with the definition the schedule has when the instance is stored
   * (an `upsert()` that returned first is never undone by it); the cadence is unchanged. Throws `WorkflowNotFoundError` for an
   * unknown id, and for a schedule deleted while it ran: a `delete()` that lands first wins, and no
   * instance starts after it returned.
   */
  async trigger<O = unknown>(id: string): Promise<WorkflowHandle<O>> {
    return this.client.handle<O>(await this.admin.trigger(id));
  }
}
