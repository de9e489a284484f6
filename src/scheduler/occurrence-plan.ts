import type { WorkflowScheduleCatchup } from './schedule-spec.js';
import type { ScheduleCadence } from './schedule-cadence.js';

/**
 * An occurrence is missed when the scheduler gets to it this long after its time or later (every
 * process was down, or none could reach the store). Occurrences less late than this are on time
 * and always start, whatever `catchup` says: a poll or a lease taken over after a crash (30 s by
 * default) is not an outage. The scheduler raises it to its lease plus 30 s when its lease is longer.
 */
export const MISSED_AFTER = 60_000;

/**
 * How late an occurrence is missed for a scheduler leasing schedules for `leaseDuration`: a
 * takeover after a crash comes up to a lease late, so with a lease longer than the default, the
 * occurrences the dead holder kept are still on time (the default keeps the same margin over it).
 */
export function missedAfterFor(leaseDuration: number): number {
  return Math.max(MISSED_AFTER, leaseDuration + MISSED_AFTER / 2);
}

/** The most occurrences one pass over a schedule starts; the rest are left for the next pass. */
export const MAX_OCCURRENCES_PER_PASS = 100;

export interface OccurrencePlanInput {
  cadence: ScheduleCadence;
  /** The last occurrence already dealt with (or the time the schedule was created or changed). */
  cursor: number;
  now: number;
  catchup: WorkflowScheduleCatchup;
  catchupWindow: number;
  missedAfter?: number;
  max?: number;
}

export interface OccurrencePlan {
  /** The occurrences to start, oldest first. */
  fire: number[];
  /** Missed occurrences this pass found (the first and the last) and which of them are in `fire`. */
  missed: { first: number; last: number; started: number[] } | null;
  /** The last occurrence this pass dealt with (started or passed over): the next pass starts after it. */
  cursor: number;
  /** The next occurrence after `cursor` (at or before `now` when this pass left some), or `null`. */
  next: number | null;
}

/**
 * Decides which occurrences after `cursor` and up to `now` start: every on-time one, and of the
 * missed ones what `catchup` says: `latest` the most recent (unless an on-time one supersedes it),
 * `all` those within `catchupWindow` of now, `none` none. At most `max` per pass, oldest first.
 */
export function planOccurrences(input: OccurrencePlanInput): OccurrencePlan {
  const { cadence, now, catchup, catchupWindow } = input;
  const max = input.max ?? MAX_OCCURRENCES_PER_PASS;
  const missedBy = now - (input.missedAfter ?? MISSED_AFTER);
  const first = cadence.after(input.cursor);
  if (first === null || first > now) return { fire: [], missed: null, cursor: input.cursor, next: first };

  const fire: number[] = [];
  let missed: OccurrencePlan['missed'] = null;
  let cursor = input.cursor;
  if (first <= missedBy) {
    const last = cadence.atOrBefore(missedBy)!;
    missed = { first, last, started: [] };
    if (catchup === 'all') {
      for (
        let t = cadence.after(Math.max(cursor, now - catchupWindow - 1));
        t !== null && t <= missedBy;
        t = cadence.after(t)
      ) {
        if (fire.length === max) return { fire, missed, cursor, next: t };
        fire.push(t);
        missed.started.push(t);
        cursor = t;
      }
    } else if (catchup === 'latest') {
      const onTime = cadence.after(missedBy);
      if (onTime === null || onTime > now) {
        fire.push(last);
        missed.started.push(last);
      }
    }
    cursor = last;
  }
  for (let t = cadence.after(cursor); t !== null && t <= now; t = cadence.after(t)) {
    if (fire.length === max) return { fire, missed, cursor, next: t };
    fire.push(t);
    cursor = t;
  }
  return { fire, missed, cursor, next: cadence.after(cursor) };
}
