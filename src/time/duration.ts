import { invalidInput } from '../errors/workflow-input-error.js';
/**
 * A length of time: milliseconds as a number, or a string of one or more `<number><unit>` parts
 * with units `ms`, `s`, `m`, `h`, `d`, `w` (`'250ms'`, `'5s'`, `'10m'`, `'1h30m'`, `'7d'`).
 */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g;

/**
 * The longest duration, in milliseconds: 100,000,000 days, a `Date`'s range. Every time the engine
 * stores (now plus a duration) stays a whole number a SQL store's `bigint` keeps exactly.
 */
const MAX_MS = 8.64e15;

/**
 * Parses a duration to whole milliseconds (a number with a fraction is rounded up, a string's
 * total rounded): the times made from it are stored in `bigint` columns, which refuse a fraction.
 * Throws a `TypeError` that names `what` (the option or argument it came from) and shows the
 * accepted forms, for anything else: negative numbers, `NaN`, `'5 parsecs'`, `''`, more than
 * 100,000,000 days.
 */
export function parseDuration(value: Duration, what = 'duration'): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0 && value <= MAX_MS) return Math.ceil(value);
    throw invalid(value, what);
  }
  if (typeof value !== 'string') throw invalid(value, what);
  const text = value.trim();
  if (!WHOLE.test(text)) throw invalid(value, what);
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit!]!;
  if (total > MAX_MS) throw invalid(value, what);
  return Math.round(total);
}

/**
 * `parseDuration` for a span that must last: a run timeout, a step's timeout. 0 would end the
 * instance (or fail the attempt) before it does anything, so it is refused like any invalid value.
 * `leftOut` says what leaving the option out gives (default: no limit).
 */
export function parsePositiveDuration(value: Duration, what: string, leftOut = 'no limit'): number {
  const ms = parseDuration(value, what);
  if (ms <= 0) {
    throw invalidInput(
      `Invalid ${what}: ${typeof value === 'string' ? `"${value}"` : String(value)}. It must be longer than 0; leave the option out for ${leftOut}.`,
    );
  }
  return ms;
}

/** `parseDuration`, or `fallback` when `value` is `undefined`. */
export function durationOr(value: Duration | undefined, fallback: number, what: string): number {
  return value === undefined ? fallback : parseDuration(value, what);
}

function invalid(value: unknown, what: string): TypeError {
  const shown = typeof value === 'string' ? `"${value}"` : String(value);
  return invalidInput(
    `Invalid ${what}: ${shown}. A duration is a non-negative number of milliseconds, or a string such as '250ms', '5s', '10m', '1h30m' or '7d', ` +
      'and at most 100,000,000 days.',
  );
}
