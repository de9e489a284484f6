import { shownValue } from '../errors/shown-value.js';
import { markInputError } from '../errors/workflow-input-error.js';
import { toJsonValue } from '../engine/json-value.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import type { WorkflowScheduleStorage } from '../storage/workflow-schedule-storage.js';
import type { WorkflowScheduleRecord } from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { changeCadence } from './cadence-change.js';
import { MISSED_AFTER } from './occurrence-plan.js';
import { changeSchedule } from './schedule-changes.js';
import {
  readScheduleSpec,
  resolveScheduleSpec,
  sameCadence,
  type ScheduleSpec,
  type WorkflowScheduleRules,
} from './schedule-spec.js';
import { readScheduleState, scheduleInfo, scheduleSave, type WorkflowScheduleInfo } from './schedule-state.js';
import { startOccurrence, type ScheduledWorkflow, type ScheduleStartDeps } from './schedule-starts.js';

/** A schedule as `WorkflowSchedules.upsert()` takes it, its workflow given by name. */
export interface ScheduleDefinition extends WorkflowScheduleRules {
  workflow: string;
  input?: unknown;
  paused?: boolean;
}

export interface ScheduleAdminOptions extends Omit<ScheduleStartDeps, 'storage'> {
  storage: ScheduleStartDeps['storage'] & {
    readonly schedules: Pick<
      WorkflowScheduleStorage,
      'getSchedule' | 'saveSchedule' | 'listSchedules' | 'deleteSchedule'
    >;
  };
  /** The workflow at the newest version this process runs, for `trigger()`; throws for one it doesn't declare. */
  workflow(name: string): ScheduledWorkflow;
  /** Whether this application declares the workflow (its declared schedules are then the code's to remove). */
  declares(name: string): boolean;
  clock: WorkflowClock;
  /** A schedule was saved: it may be due at once. */
  changed(): void;
  /** How late an occurrence is missed (`missedAfterFor()` of the worker's lease). Default `MISSED_AFTER`. */
  missedAfter?: number;
}

/** How many times `trigger()` reads the schedule again when it changed between its read and its start. */
const TRIGGER_ATTEMPTS = 20;

/**
 * The operations behind `WorkflowSchedules`, framework-free: each change is a save conditional on
 * the revision it read (recomputed when a scheduler wrote first), and releases the schedule's lease
 * so a process that held it does not go on with what it read before the change.
 */
export class ScheduleAdmin {
  constructor(private readonly options: ScheduleAdminOptions) {}

  /**
   * Creates the schedule, or replaces one created at run time. Its cadence counts from now when it
   * is new or its cadence changed; a change of input or rules alone keeps its place. Either way an
   * occurrence that was due and had not started yet starts once, with the new definition
   * (`changeCadence()`), unless the schedule is now paused.
   */
  async upsert(id: string, definition: ScheduleDefinition): Promise<WorkflowScheduleInfo> {
    checkId(id);
    const where = `Schedule "${id}"`;
    if (!definition || typeof definition !== 'object')
      throw markInputError(new TypeError(`${where}: pass { workflow, cron | every, ... }.`));
    const { workflow, input, paused = false, ...rules } = definition;
    const known = ['cron', 'every', 'timezone', 'overlap', 'catchup', 'catchupWindow'];
    const unknown = Object.keys(rules).find((key) => !known.includes(key));
    if (unknown)
      throw markInputError(
        new TypeError(
          `${where}: unknown option "${unknown}". Known options: workflow, input, paused, ${known.join(', ')}.`,
        ),
      );
    const spec = resolveScheduleSpec(rules, where);
    if (typeof paused !== 'boolean') throw markInputError(new TypeError(`${where}: paused must be true or false.`));
    const json = toJsonValue(input, `The input of ${where.toLowerCase()}`, 'input') ?? null;
    const { name } = this.options.workflow(workflow);
    const now = this.options.clock.now();
    const saved = await changeSchedule(this.options.storage.schedules, id, (current) => {
      if (current === null) {
        const state = { cursor: now, lastStartedId: null, lastStartedAt: null, error: null, owed: [] };
        return scheduleSave({
          id,
          workflow: name,
          declared: false,
          spec,
          input: json,
          paused,
          state,
          expectRevision: null,
          now,
        });
      }
      if (current.declared) throw declaredError(current, 'replaced');
      let state = readScheduleState(current.state, now);
      const stored = readable(current);
      if (current.paused && !paused) {
        // A resume: the cadence starts again from now, and nothing was owed while paused.
        state = { ...state, cursor: now, owed: [] };
      } else if (!stored || !sameCadence(stored, spec) || current.workflow !== name) {
        state = changeCadence(state, stored, { now, paused, missedAfter: this.options.missedAfter ?? MISSED_AFTER });
      } else if (paused) {
        state.owed = [];
      }
      state.error = null;
      return scheduleSave({
        id,
        workflow: name,
        declared: false,
        spec,
        input: json,
        paused,
        state,
        expectRevision: current.revision,
        now,
      });
    });
    this.options.changed();
    return scheduleInfo(saved!, spec);
  }

  /** The schedule, or `null`. */
  async get(id: string): Promise<WorkflowScheduleInfo | null> {
    checkId(id);
    const record = await this.options.storage.schedules.getSchedule(id);
    return record ? scheduleInfo(record, readable(record)) : null;
  }

  /** Schedules ordered by id, filtered by workflow and whether they are declared: one page. */
  async list(
    query: { workflow?: string; declared?: boolean; limit?: number; offset?: number } = {},
  ): Promise<WorkflowScheduleInfo[]> {
    const limit = query.limit ?? 100;
    const offset = query.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw markInputError(
        new TypeError(
          `Invalid schedules list() option "limit": ${shownValue(limit)}. Use a whole number from 1 to 1000.`,
        ),
      );
    if (!Number.isInteger(offset) || offset < 0)
      throw markInputError(
        new TypeError(
          `Invalid schedules list() option "offset": ${shownValue(offset)}. Use a whole number, 0 or more.`,
        ),
      );
    if (query.declared !== undefined && typeof query.declared !== 'boolean')
      throw markInputError(new TypeError('Invalid schedules list() option "declared": use true or false.'));
    const records = await this.options.storage.schedules.listSchedules({
      ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
      ...(query.declared === undefined ? {} : { declared: query.declared }),
      limit,
      offset,
    });
    return records.map((record) => scheduleInfo(record, readable(record)));
  }

  /** Stops starting instances (the ones running go on). Pausing a paused schedule changes nothing. */
  async pause(id: string): Promise<WorkflowScheduleInfo> {
    return this.setPaused(id, true);
  }

  /** Starts again with the next occurrence after now; occurrences while it was paused are not caught up. */
  async resume(id: string): Promise<WorkflowScheduleInfo> {
    return this.setPaused(id, false);
  }

  /**
   * Deletes a schedule created at run time, or a declared one whose workflow this application no
   * longer declares (left behind when a workflow was removed); instances it started stay. Other
   * declared schedules are removed from the code.
   */
  async delete(id: string): Promise<void> {
    checkId(id);
    for (;;) {
      const current = await this.options.storage.schedules.getSchedule(id);
      if (!current) throw notFound(id);
      if (current.declared && this.options.declares(current.workflow)) throw declaredError(current, 'deleted');
      if (await this.options.storage.schedules.deleteSchedule(id, current.revision)) return;
    }
  }

  /**
   * Starts one instance now, outside the cadence (paused or not, whatever its overlap), with id
   * `<id>@<ISO time of now>` and `scheduledAt` now; resolves to that id. The create is fenced by
   * the schedule's existence at the revision it read (`createOccurrence()` without a token, with
   * the revision): a delete that lands after the read makes it throw `WorkflowNotFoundError`
   * instead of starting an instance after the delete returned, and a change (an `upsert()`, or a
   * scheduler's record of an occurrence) makes it read the schedule again, so the instance starts
   * with the definition the schedule has when it is stored, never one an `upsert()` that returned replaced.
   */
  async trigger(id: string): Promise<string> {
    checkId(id);
    const at = this.options.clock.now();
    for (let attempt = 0; attempt < TRIGGER_ATTEMPTS; attempt++) {
      const record = await this.options.storage.schedules.getSchedule(id);
      if (!record) throw notFound(id);
      const workflow = this.options.workflow(record.workflow);
      const outcome = await startOccurrence(this.options, {
        scheduleId: id,
        workflow,
        input: record.input,
        at,
        overlap: 'allow',
        triggered: true,
        revision: record.revision,
      });
      // Deleted or changed since it was read: the next read says which.
      if (outcome.kind !== 'lost') return outcome.id;
    }
    throw new Error(
      `Schedule "${id}" kept changing while it was being triggered (${TRIGGER_ATTEMPTS} attempts). Try again.`,
    );
  }

  private async setPaused(id: string, paused: boolean): Promise<WorkflowScheduleInfo> {
    checkId(id);
    const now = this.options.clock.now();
    let spec: ScheduleSpec | null = null;
    const saved = await changeSchedule(this.options.storage.schedules, id, (current) => {
      if (!current) throw notFound(id);
      spec = readScheduleSpec(current.spec, id);
      if (current.paused === paused) return null;
      const state = readScheduleState(current.state, now);
      // A pause stops every start that has not landed; occurrences while it was paused are not
      // owed: the cadence starts again from now.
      state.owed = [];
      if (!paused) state.cursor = now;
      return scheduleSave({ ...current, spec, paused, state, expectRevision: current.revision, now });
    });
    if (!paused) this.options.changed();
    return scheduleInfo(saved!, spec);
  }
}

function readable(record: WorkflowScheduleRecord): ScheduleSpec | null {
  try {
    return readScheduleSpec(record.spec, record.id);
  } catch {
    return null;
  }
}

function checkId(id: unknown): void {
  if (typeof id !== 'string' || id.trim() === '')
    throw markInputError(new TypeError(`Invalid schedule id ${JSON.stringify(id)}: use a non-empty string.`));
}

function notFound(id: string): WorkflowNotFoundError {
  return new WorkflowNotFoundError(`No schedule has the id "${id}".`);
}

function declaredError(record: WorkflowScheduleRecord, action: string): WorkflowInvalidStateError {
  return new WorkflowInvalidStateError(
    `Schedule "${record.id}" is declared on @Workflow('${record.workflow}') and can't be ${action} at run time: ` +
      'change or remove it in the code (declared schedules are reconciled at startup). pause(), resume() and trigger() work on it.',
  );
}
