import { planOccurrences } from './occurrence-plan.js';
import { cadenceOf } from './schedule-cadence.js';
import type { ScheduleSpec } from './schedule-spec.js';
import type { ScheduleState } from './schedule-state.js';

/**
 * The state of a schedule whose cadence (or workflow) changes at `now`: the new cadence counts from
 * `now`, and the occurrences the old one had due by then and not started yet are owed, as the
 * scheduler would have started them had it got there first (the on-time ones, and the missed ones
 * as the old `catchup` says). The next pass starts each owed occurrence once, with the new
 * definition, under its usual id (`<scheduleId>@<ISO time>`). So a change racing a due
 * occurrence gives one run of it: the old definition's, when its start landed before the change
 * (the owed start then finds it and creates nothing), or the new one's, never both and never none.
 * A schedule paused by the change owes nothing (a pause stops every start that has not landed).
 * `old` is `null` when the stored spec can't be read: only what was owed already stays owed.
 */
export function changeCadence(
  state: ScheduleState,
  old: ScheduleSpec | null,
  change: { now: number; paused: boolean; missedAfter: number },
): ScheduleState {
  const { now, paused, missedAfter } = change;
  let owed: number[] = [];
  if (!paused) {
    const due = old
      ? planOccurrences({
          cadence: cadenceOf(old),
          cursor: state.cursor,
          now,
          catchup: old.catchup,
          catchupWindow: old.catchupWindow,
          missedAfter,
        }).fire
      : [];
    owed = [...new Set([...state.owed, ...due])].sort((a, b) => a - b);
  }
  return { ...state, cursor: now, owed };
}
