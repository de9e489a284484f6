/** A delay that starts at `minDelay` milliseconds and doubles up to `maxDelay` (a backoff, an adaptive poll). */
export interface DelayRange {
  minDelay: number;
  maxDelay: number;
}

/** The delay after `delay` in `range`: doubled, at most `maxDelay`. */
export function doubledDelay(delay: number, range: DelayRange): number {
  return Math.min(range.maxDelay, delay * 2);
}
