/** A delay that starts at `minDelay` milliseconds and doubles up to `maxDelay` (a backoff, an adaptive poll). */
export interface DelayRange {
  minDelay: number;
  maxDelay: number;
}

/** The delay after `delay` in `range`: doubled, at most `maxDelay`. */
export function doubledDelay(delay: number, range: DelayRange): number {
  return Math.min(range.maxDelay, delay * 2);
}

/**
 * `value` as a store option that is a `DelayRange` (`undefined`: the default), or a `TypeError`
 * naming the store and the option: both delays finite, `minDelay` at least 1 and at most `maxDelay`.
 */
export function checkDelayRange(value: unknown, option: string, store: string): DelayRange | undefined {
  if (value === undefined) return undefined;
  const range = value as Partial<DelayRange> | null;
  const valid =
    typeof range === 'object' &&
    range !== null &&
    typeof range.minDelay === 'number' &&
    typeof range.maxDelay === 'number' &&
    Number.isFinite(range.maxDelay) &&
    range.minDelay >= 1 &&
    range.minDelay <= range.maxDelay;
  if (valid) return { minDelay: range.minDelay!, maxDelay: range.maxDelay! };
  throw new TypeError(
    `${store}: invalid \`${option}\` ${JSON.stringify(value)}. Give { minDelay, maxDelay } in milliseconds, with 1 <= minDelay <= maxDelay.`,
  );
}
