import { sameJson } from '../engine/json-value.js';
import type { WorkflowScheduleStorage } from '../storage/workflow-schedule-storage.js';
import type { WorkflowScheduleRecord } from '../storage/workflow-store.js';
import { changeCadence } from './cadence-change.js';
import { MISSED_AFTER } from './occurrence-plan.js';
import { changeSchedule } from './schedule-changes.js';
import type { DeclaredSchedule } from './declared-schedule.js';
import { readScheduleSpec, sameCadence, type ScheduleSpec } from './schedule-spec.js';
import { readScheduleState, scheduleSave } from './schedule-state.js';

/** The store operations reconciliation uses (`WorkflowStorage.schedules` has them). */
export type ReconcileStorage = Pick<
  WorkflowScheduleStorage,
  'getSchedule' | 'listSchedules' | 'saveSchedule' | 'deleteSchedule'
>;

/** What a reconciliation changed, by schedule id. */
export interface ReconcileResult {
  added: string[];
  changed: string[];
  removed: string[];
}

/**
 * Makes the store's declared schedules what the code declares: adds the new ones, changes those
 * whose cadence, rules, input or declared `paused` differ, and deletes the declared schedules of
 * `workflows` (the workflows this process declares) that the code no longer has. Schedules
 * created at run time are never touched, nor declared ones of workflows this process doesn't know
 * (another application on the same store may declare them).
 *
 * A changed cadence starts from `now` (occurrences of the old cadence are not caught up, but one
 * due by then and not started yet still starts once: `changeCadence()`, with `missedAfter`); a
 * pause or resume through `WorkflowSchedules` stands unless the code's `paused` itself changed.
 */
export async function reconcileSchedules(
  storage: ReconcileStorage,
  declared: DeclaredSchedule[],
  workflows: readonly string[],
  now: number,
  missedAfter: number = MISSED_AFTER,
): Promise<ReconcileResult> {
  const result: ReconcileResult = { added: [], changed: [], removed: [] };
  const owners = new Map<string, string>();
  for (const schedule of declared) {
    const other = owners.get(schedule.id);
    if (other !== undefined) {
      throw new TypeError(
        `Schedule id "${schedule.id}" is declared by both @Workflow('${other}') and @Workflow('${schedule.workflow}'). Give each schedule its own id.`,
      );
    }
    owners.set(schedule.id, schedule.workflow);
  }
  for (const schedule of declared) {
    let outcome: 'added' | 'changed' | null = null;
    await changeSchedule(
      storage,
      schedule.id,
      (current) => {
        outcome = null;
        if (current === null) {
          outcome = 'added';
          const state = { cursor: now, lastStartedId: null, lastStartedAt: null, error: null, owed: [] };
          return scheduleSave({ ...schedule, declared: true, state, expectRevision: null, now });
        }
        if (!current.declared) {
          throw new TypeError(
            `Schedule "${schedule.id}" declared on @Workflow('${schedule.workflow}') already exists as a schedule created at run time ` +
              `(for "${current.workflow}"). Delete it with WorkflowSchedules.delete('${schedule.id}'), or give the declared one another id.`,
          );
        }
        const stored = storedSpec(current);
        // An input no configured codec can read (its key removed) is replaced by the declared one, from the code.
        const sameInput = !current.unreadable && sameJson(current.input, schedule.input);
        if (stored && current.workflow === schedule.workflow && sameJson(stored, schedule.spec) && sameInput)
          return null;
        outcome = 'changed';
        let state = readScheduleState(current.state, now);
        const paused = stored && stored.declaredPaused === schedule.paused ? current.paused : schedule.paused;
        if (current.paused && !paused) {
          // Resuming restarts the cadence from now, as WorkflowSchedules.resume() does.
          state = { ...state, cursor: now, owed: [] };
        } else if (!stored || !sameCadence(stored, schedule.spec) || current.workflow !== schedule.workflow) {
          // A new cadence counts from now; what the old one had due and not started is owed.
          state = changeCadence(state, stored, { now, paused, missedAfter });
        } else if (paused) {
          state.owed = [];
        }
        state.error = null;
        return scheduleSave({ ...schedule, paused, declared: true, state, expectRevision: current.revision, now });
      },
      { readable: true },
    );
    if (outcome) result[outcome === 'added' ? 'added' : 'changed'].push(schedule.id);
  }
  const wanted = new Set(declared.map((s) => s.id));
  for (const workflow of workflows) {
    for (const stale of await allDeclared(storage, workflow)) {
      if (wanted.has(stale.id)) continue;
      if (await storage.deleteSchedule(stale.id, stale.revision)) result.removed.push(stale.id);
      else if ((await storage.getSchedule(stale.id, { readable: true }))?.declared) {
        // It changed under us (a scheduler recorded an occurrence): delete whatever it is now.
        if (await storage.deleteSchedule(stale.id)) result.removed.push(stale.id);
      }
    }
  }
  return result;
}

function storedSpec(record: WorkflowScheduleRecord): ScheduleSpec | null {
  try {
    return readScheduleSpec(record.spec, record.id);
  } catch {
    return null;
  }
}

async function allDeclared(storage: ReconcileStorage, workflow: string): Promise<WorkflowScheduleRecord[]> {
  const found: WorkflowScheduleRecord[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await storage.listSchedules({ workflow, declared: true, limit: 500, offset }, { readable: true });
    found.push(...page);
    if (page.length < 500) return found;
  }
}
