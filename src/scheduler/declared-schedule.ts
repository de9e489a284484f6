import { toJsonValue } from '../engine/json-value.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { resolveScheduleSpec, type ScheduleSpec, type WorkflowScheduleRules } from './schedule-spec.js';

/**
 * A schedule declared on `@Workflow(name, { schedules })`: its cadence and rules (see
 * `WorkflowScheduleRules`), reconciled with the store at startup.
 */
export interface WorkflowScheduleOptions extends WorkflowScheduleRules {
  /** Unique among the application's schedules. Default: the workflow's name, when it declares one schedule. */
  id?: string;
  /** The input of each instance it starts (JSON). Default `null`. */
  input?: unknown;
  /**
   * Created paused. Changing this value in code pauses or resumes it at the next startup;
   * otherwise a pause or resume through `WorkflowSchedules` stands across restarts.
   */
  paused?: boolean;
}

/** A declared schedule, validated: what the scheduler reconciles with the store at startup. */
export interface DeclaredSchedule {
  id: string;
  workflow: string;
  spec: ScheduleSpec;
  input: unknown;
  paused: boolean;
}

/**
 * Validates the schedules a workflow declares. `where` names the class (`@Workflow('x') on X`);
 * every error starts with it and the schedule's index, and quotes what is wrong.
 */
export function resolveDeclaredSchedules(workflow: string, schedules: unknown, where: string): DeclaredSchedule[] {
  if (schedules === undefined) return [];
  if (!Array.isArray(schedules)) throw new TypeError(`${where}: schedules must be an array of { cron | every, ... }.`);
  const resolved = (schedules as WorkflowScheduleOptions[]).map((options, index) => {
    const at = `${where}: schedules[${index}]`;
    if (!options || typeof options !== 'object')
      throw new TypeError(`${at} must be an object such as { cron: '0 * * * *' } or { every: '1m' }.`);
    checkKnownKeys(
      options,
      ['id', 'cron', 'every', 'timezone', 'input', 'overlap', 'catchup', 'catchupWindow', 'paused'],
      at,
    );
    if (options.id === undefined && schedules.length > 1) {
      throw new TypeError(`${at} needs an id: a workflow that declares several schedules names each of them.`);
    }
    const id = options.id ?? workflow;
    if (typeof id !== 'string' || id.trim() === '')
      throw new TypeError(`${at}: invalid id ${JSON.stringify(id)}. Use a non-empty string.`);
    if (options.paused !== undefined && typeof options.paused !== 'boolean')
      throw new TypeError(`${at}: paused must be true or false.`);
    const paused = options.paused ?? false;
    return {
      id,
      workflow,
      spec: resolveScheduleSpec(options, `${at} ("${id}")`, paused),
      input: toJsonValue(options.input, `The input of ${at}`, 'input') ?? null,
      paused,
    };
  });
  const seen = new Set<string>();
  for (const schedule of resolved) {
    if (seen.has(schedule.id))
      throw new TypeError(`${where} declares schedule "${schedule.id}" twice. Give each schedule its own id.`);
    seen.add(schedule.id);
  }
  return resolved;
}
