import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/index.js';

describe('durations', () => {
  it('parses the documented forms', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('5s')).toBe(5_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration(42)).toBe(42);
    // Whole milliseconds (stored times are bigints): a fraction is rounded up, so a positive one stays positive.
    expect(parseDuration(1.5)).toBe(2);
    expect(parseDuration(0.25)).toBe(1);
    expect(parseDuration('1.5ms')).toBe(2);
  });

  it('refuses anything else with an error naming where it came from', () => {
    expect(() => parseDuration('5 parsecs', 'worker.pollInterval')).toThrow(
      /Invalid worker.pollInterval: "5 parsecs".*'1h30m'/,
    );
    expect(() => parseDuration(-1)).toThrow(/non-negative/);
    expect(() => parseDuration('')).toThrow(/Invalid duration/);
    expect(() => parseDuration(NaN)).toThrow(/Invalid duration/);
    // Past a Date's range now + duration is no longer a whole number a bigint keeps.
    expect(() => parseDuration(1e300)).toThrow(/at most 100,000,000 days/);
    expect(() => parseDuration('100000001d')).toThrow(/at most 100,000,000 days/);
    expect(parseDuration('100000000d')).toBe(8.64e15);
  });
});
