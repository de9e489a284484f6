import type { WorkflowScheduleStorage } from '../storage/workflow-schedule-storage.js';
import type { WorkflowScheduleRecord, WorkflowScheduleSave } from '../storage/workflow-store.js';

/** The store operations that change schedules (`WorkflowStorage.schedules` has them). */
export type ScheduleChangeStorage = Pick<WorkflowScheduleStorage, 'getSchedule' | 'saveSchedule'>;

/** How many times a change is recomputed when the scheduler (or another process) wrote first. */
const ATTEMPTS = 20;

/**
 * Applies a change to a schedule as a conditional save on the revision it read: `change` gets the
 * schedule as stored (or `null`) and returns the save, or `null` for nothing to do. When another
 * write lands in between (a scheduler recording an occurrence bumps the revision), it reads again
 * and recomputes, so a change never overwrites what it did not see.
 */
export async function changeSchedule(
  storage: ScheduleChangeStorage,
  id: string,
  change: (current: WorkflowScheduleRecord | null) => WorkflowScheduleSave | null,
  read: { readable?: boolean } = {},
): Promise<WorkflowScheduleRecord | null> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const current = await storage.getSchedule(id, read);
    const save = change(current);
    if (save === null) return current;
    const saved = await storage.saveSchedule(save);
    if (saved) return saved;
  }
  throw new Error(`Schedule "${id}" kept changing while it was being saved (${ATTEMPTS} attempts). Try again.`);
}
