import type { WorkflowSchedules } from '../client/workflow-schedules.js';
import { instanceUrl } from './list-query.js';

/** The schedule actions a POST may ask for, and what each says once done. */
export const SCHEDULE_ACTIONS: Record<string, string> = {
  'pause-schedule': 'Schedule paused: it starts no instance until resumed.',
  'resume-schedule': 'Schedule resumed: it starts again from its next occurrence.',
  'trigger-schedule': 'Schedule triggered: this instance started now, outside its cadence.',
};

/**
 * Runs a schedule action on `schedule`; resolves to where to go next (the schedules page, or the
 * instance a trigger started). Throws what `WorkflowSchedules` throws.
 */
export async function runScheduleAction(
  schedules: WorkflowSchedules,
  base: string,
  action: string,
  schedule: string,
): Promise<string> {
  if (action === 'pause-schedule') await schedules.pause(schedule);
  else if (action === 'resume-schedule') await schedules.resume(schedule);
  else return `${instanceUrl(base, (await schedules.trigger(schedule)).id)}&done=${action}`;
  return `${base}/schedules?done=${action}`;
}
