import { describe, expect, it } from 'vitest';
import { planOccurrences, MISSED_AFTER } from '../../../src/scheduler/occurrence-plan.js';
import { cadenceOf } from '../../../src/scheduler/schedule-cadence.js';
import { resolveScheduleSpec } from '../../../src/scheduler/schedule-spec.js';

const cadence = (rules: Parameters<typeof resolveScheduleSpec>[0]) => cadenceOf(resolveScheduleSpec(rules, 'test'));
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const at = (text: string) => Date.parse(text);

function run(c: ReturnType<typeof cadence>, from: string, count: number): string[] {
  const out: string[] = [];
  for (let t = c.after(at(from)); t !== null && out.length < count; t = c.after(t)) out.push(iso(t)!);
  return out;
}

describe('cadence', () => {
  it('every: whole multiples of the interval since the epoch, strictly after', () => {
    const c = cadence({ every: '15m' });
    expect(iso(c.after(at('2026-01-01T10:07:00Z')))).toBe('2026-01-01T10:15:00.000Z');
    expect(iso(c.after(at('2026-01-01T10:15:00Z')))).toBe('2026-01-01T10:30:00.000Z');
    expect(iso(c.atOrBefore(at('2026-01-01T10:15:00Z')))).toBe('2026-01-01T10:15:00.000Z');
    expect(iso(c.atOrBefore(at('2026-01-01T10:14:59.999Z')))).toBe('2026-01-01T10:00:00.000Z');
  });

  it('cron: strictly after, at or before, with seconds', () => {
    const c = cadence({ cron: '*/20 * * * * *' });
    expect(iso(c.after(at('2026-01-01T10:00:00Z')))).toBe('2026-01-01T10:00:20.000Z');
    expect(iso(c.after(at('2026-01-01T10:00:19.500Z')))).toBe('2026-01-01T10:00:20.000Z');
    expect(iso(c.atOrBefore(at('2026-01-01T10:00:20Z')))).toBe('2026-01-01T10:00:20.000Z');
    expect(iso(c.atOrBefore(at('2026-01-01T10:00:19.999Z')))).toBe('2026-01-01T10:00:00.000Z');
  });

  // Europe/Paris in 2026: clocks go from 02:00 CET to 03:00 CEST on 29 March (01:00 UTC) and from
  // 03:00 CEST back to 02:00 CET on 25 October (01:00 UTC).
  it('a fixed-time cron in Europe/Paris: runs when the clock has jumped in spring, once in autumn', () => {
    const c = cadence({ cron: '30 2 * * *', timezone: 'Europe/Paris' });
    expect(run(c, '2026-03-27T12:00:00Z', 4)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: 03:00 CEST, right after the jump
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    expect(run(c, '2026-10-23T12:00:00Z', 4)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 comes twice: only the first pass
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it('an hourly cron in Europe/Paris: skips the hour that does not exist, runs at both passes of the repeated one', () => {
    const c = cadence({ cron: '0 * * * *', timezone: 'Europe/Paris' });
    expect(run(c, '2026-03-28T23:30:00Z', 4)).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST (02:00 never happens)
      '2026-03-29T02:00:00.000Z',
      '2026-03-29T03:00:00.000Z',
    ]);
    expect(run(c, '2026-10-24T23:30:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET, the repeated hour
      '2026-10-25T02:00:00.000Z', // 03:00 CET
      '2026-10-25T03:00:00.000Z',
    ]);
  });
});

describe('planOccurrences', () => {
  const T = at('2026-01-01T00:00:00Z');
  const minute = cadence({ every: '1m' });
  const plan = (
    cursor: number,
    now: number,
    catchup: 'latest' | 'all' | 'none',
    extra: { catchupWindow?: number; max?: number } = {},
  ) =>
    planOccurrences({
      cadence: minute,
      cursor,
      now,
      catchup,
      catchupWindow: extra.catchupWindow ?? 86_400_000,
      max: extra.max,
    });

  it('nothing due: nothing to start, next is the first occurrence after the cursor', () => {
    expect(plan(T, T + 59_999, 'latest')).toEqual({ fire: [], missed: null, cursor: T, next: T + 60_000 });
  });

  it('on-time occurrences always start, whatever catchup says', () => {
    const tens = cadence({ every: '10s' });
    for (const catchup of ['latest', 'all', 'none'] as const) {
      expect(planOccurrences({ cadence: tens, cursor: T, now: T + 55_000, catchup, catchupWindow: 0 })).toEqual({
        fire: [1, 2, 3, 4, 5].map((n) => T + n * 10_000),
        missed: null,
        cursor: T + 50_000,
        next: T + 60_000,
      });
    }
  });

  it('latest: of the missed occurrences only the most recent starts, when no on-time one supersedes it', () => {
    const now = T + 10 * 60_000 + 30_000; // 10:30 past: the 10-minute occurrence is on time, 1..9 missed
    expect(plan(T, now, 'latest')).toEqual({
      fire: [T + 10 * 60_000],
      missed: { first: T + 60_000, last: T + 9 * 60_000, started: [] },
      cursor: T + 10 * 60_000,
      next: T + 11 * 60_000,
    });
    const daily = cadence({ cron: '0 9 * * *' });
    const late = planOccurrences({
      cadence: daily,
      cursor: T,
      now: T + 11 * 3_600_000,
      catchup: 'latest',
      catchupWindow: 0,
    });
    expect(late.fire.map(iso)).toEqual(['2026-01-01T09:00:00.000Z']);
    expect(late.missed?.started.map(iso)).toEqual(['2026-01-01T09:00:00.000Z']);
    expect(iso(late.next)).toBe('2026-01-02T09:00:00.000Z');
  });

  it('none: missed occurrences are passed over', () => {
    const daily = cadence({ cron: '0 9 * * *' });
    const late = planOccurrences({
      cadence: daily,
      cursor: T,
      now: T + 11 * 3_600_000,
      catchup: 'none',
      catchupWindow: 0,
    });
    expect(late).toEqual({
      fire: [],
      missed: { first: T + 9 * 3_600_000, last: T + 9 * 3_600_000, started: [] },
      cursor: T + 9 * 3_600_000,
      next: T + 33 * 3_600_000,
    });
  });

  it('all: every missed occurrence within the window starts, oldest first, older ones are dropped', () => {
    const now = T + 10 * 60_000;
    const result = plan(T, now, 'all', { catchupWindow: 5 * 60_000 });
    expect(result.fire).toEqual([5, 6, 7, 8, 9, 10].map((m) => T + m * 60_000));
    expect(result.missed).toEqual({
      first: T + 60_000,
      last: T + 9 * 60_000,
      started: [5, 6, 7, 8, 9].map((m) => T + m * 60_000),
    });
    expect(result.cursor).toBe(T + 10 * 60_000);
  });

  it('stops at max per pass and leaves the rest due', () => {
    const result = plan(T, T + 10 * 60_000, 'all', { max: 4 });
    expect(result.fire).toEqual([1, 2, 3, 4].map((m) => T + m * 60_000));
    expect(result).toMatchObject({ cursor: T + 4 * 60_000, next: T + 5 * 60_000 });
    const onTime = planOccurrences({
      cadence: cadence({ every: '1s' }),
      cursor: T,
      now: T + 30_000,
      catchup: 'none',
      catchupWindow: 0,
      max: 10,
    });
    expect(onTime).toMatchObject({
      fire: Array.from({ length: 10 }, (_, i) => T + (i + 1) * 1_000),
      cursor: T + 10_000,
      next: T + 11_000,
    });
  });

  it('an occurrence exactly MISSED_AFTER late counts as missed', () => {
    expect(plan(T, T + 60_000 + MISSED_AFTER, 'none').fire).toEqual([T + 120_000]);
  });
});
