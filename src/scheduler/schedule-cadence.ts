import { Cron } from 'croner';
import { cronerOptions, type ScheduleSpec } from './schedule-spec.js';

/**
 * When a schedule's occurrences fall, as epoch milliseconds. Cron expressions are read by croner
 * in the schedule's time zone, daylight-saving transitions included as croner defines them: a
 * fixed-time expression (such as `30 2 * * *`) whose time falls in a spring-forward gap runs when
 * the clock has jumped, and once when a time repeats in autumn; an interval expression (such as
 * `0 * * * *`) skips the times that don't exist and runs at both passes of a repeated time.
 */
export interface ScheduleCadence {
  /** The first occurrence strictly after `time`, or `null` when none comes. */
  after(time: number): number | null;
  /** The last occurrence at or before `time`, or `null` when none came. */
  atOrBefore(time: number): number | null;
}

/** The cadence of a validated spec. */
export function cadenceOf(spec: ScheduleSpec): ScheduleCadence {
  if (spec.every !== null) return everyCadence(spec.every);
  return cronCadence(new Cron(spec.cron!, cronerOptions(spec.timezone)));
}

function everyCadence(every: number): ScheduleCadence {
  return {
    after: (time) => (Math.floor(time / every) + 1) * every,
    atOrBefore: (time) => Math.floor(time / every) * every,
  };
}

function cronCadence(cron: Cron<unknown>): ScheduleCadence {
  return {
    after: (time) => cron.nextRun(new Date(time))?.getTime() ?? null,
    // croner's previous runs are strictly before the reference but include one earlier in the
    // same second, so one millisecond past `time` includes an occurrence exactly at it.
    atOrBefore: (time) => cron.previousRuns(1, new Date(time + 1))[0]?.getTime() ?? null,
  };
}
