import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';

/**
 * A time option of `method` (`start`'s `startAt`, `list`'s bounds) as epoch milliseconds, whole (a
 * fraction rounded up: the SQL stores keep times as bigints, and created times are whole, so a
 * bound rounded up selects the same instances), within a `Date`'s range.
 */
export function toEpochOption(value: Date | number, method: string, what: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw invalidInput(
      `Invalid ${method}() option "${what}": ${shownValue(value)}. Pass a Date or epoch milliseconds (within a Date's range).`,
    );
  }
  return Math.ceil(ms);
}
