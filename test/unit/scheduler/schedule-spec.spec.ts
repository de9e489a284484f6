import { describe, expect, it } from 'vitest';
import { resolveScheduleSpec, readScheduleSpec } from '../../../src/scheduler/schedule-spec.js';
import { resolveDeclaredSchedules } from '../../../src/scheduler/declared-schedule.js';

const where = "Schedule 'nightly'";

describe('schedule rules: validation', () => {
  it('applies the defaults: overlap skip, catchup latest within a day, UTC', () => {
    expect(resolveScheduleSpec({ cron: '0 9 * * 1-5' }, where)).toEqual({
      cron: '0 9 * * 1-5',
      every: null,
      timezone: null,
      overlap: 'skip',
      catchup: 'latest',
      catchupWindow: 86_400_000,
      declaredPaused: null,
    });
    expect(
      resolveScheduleSpec({ every: '15m', overlap: 'allow', catchup: 'all', catchupWindow: '2h' }, where),
    ).toMatchObject({
      cron: null,
      every: 900_000,
      overlap: 'allow',
      catchup: 'all',
      catchupWindow: 7_200_000,
    });
  });

  it('accepts six fields (seconds first) and normalizes spaces', () => {
    expect(resolveScheduleSpec({ cron: ' */10  * * * * * ', timezone: 'Europe/Paris' }, where)).toMatchObject({
      cron: '*/10 * * * * *',
      timezone: 'Europe/Paris',
    });
  });

  it.each([
    [
      '99 99 * * *',
      /Schedule 'nightly': invalid cron '99 99 \* \* \*' \(Invalid value for minute: 99\)\. Use five fields/,
    ],
    ['every day', /invalid cron 'every day'/],
    ['* * * *', /invalid cron '\* \* \* \*'/],
    ['0 0 0 1 1 * 2030', /invalid cron '0 0 0 1 1 \* 2030'.*5 or 6 parts/],
    ['', /invalid cron ''/],
  ])('refuses the cron %j, quoting it', (cron, message) => {
    expect(() => resolveScheduleSpec({ cron }, where)).toThrow(message);
  });

  it('refuses a cron that never occurs', () => {
    expect(() => resolveScheduleSpec({ cron: '0 0 30 2 *' }, where)).toThrow(
      "Schedule 'nightly': cron '0 0 30 2 *' never occurs",
    );
  });

  it('refuses an unknown time zone, quoting it, and a time zone on an interval', () => {
    expect(() => resolveScheduleSpec({ cron: '0 * * * *', timezone: 'Mars/Olympus' }, where)).toThrow(
      "Schedule 'nightly': unknown timezone 'Mars/Olympus'. Use an IANA name",
    );
    expect(() => resolveScheduleSpec({ every: '1h', timezone: 'Europe/Paris' }, where)).toThrow(
      "timezone 'Europe/Paris' applies to cron only",
    );
  });

  it('refuses cron with every, neither, bad intervals, overlaps and catch-ups', () => {
    expect(() => resolveScheduleSpec({ cron: '* * * * *', every: '1m' }, where)).toThrow('needs exactly one of cron');
    expect(() => resolveScheduleSpec({}, where)).toThrow('needs exactly one of cron');
    expect(() => resolveScheduleSpec({ every: '5 parsecs' }, where)).toThrow(
      'Invalid every of Schedule \'nightly\': "5 parsecs"',
    );
    expect(() => resolveScheduleSpec({ every: '500ms' }, where)).toThrow(
      "every '500ms' must be a whole number of seconds",
    );
    expect(() => resolveScheduleSpec({ every: 0 }, where)).toThrow('every 0 must be a whole number of seconds');
    expect(() => resolveScheduleSpec({ every: '1m', overlap: 'queue' as never }, where)).toThrow(
      "invalid overlap 'queue'. Use 'skip', 'allow', 'cancel-previous'",
    );
    expect(() => resolveScheduleSpec({ every: '1m', catchup: 'some' as never }, where)).toThrow(
      "invalid catchup 'some'",
    );
    expect(() => resolveScheduleSpec({ every: '1m', catchupWindow: 'forever' }, where)).toThrow(
      'Invalid catchupWindow',
    );
  });

  it('reads a stored spec back, and refuses a tampered one naming the schedule', () => {
    const spec = resolveScheduleSpec({ cron: '0 * * * *', timezone: 'Asia/Tokyo' }, where, true);
    expect(readScheduleSpec(JSON.parse(JSON.stringify(spec)), 'nightly')).toEqual(spec);
    expect(() => readScheduleSpec({ ...spec, cron: '61 * * * *' }, 'nightly')).toThrow(
      `Schedule "nightly" as stored: invalid cron '61 * * * *'`,
    );
  });
});

describe('declared schedules', () => {
  const at = "@Workflow('reports') on Reports";

  it('defaults the id of a single schedule to the workflow name and keeps input and paused', () => {
    expect(resolveDeclaredSchedules('reports', [{ every: '1h', input: { kind: 'daily' }, paused: true }], at)).toEqual([
      {
        id: 'reports',
        workflow: 'reports',
        spec: expect.objectContaining({ every: 3_600_000, declaredPaused: true }),
        input: { kind: 'daily' },
        paused: true,
      },
    ]);
  });

  it('needs ids when a workflow declares several, unique ones, and known options', () => {
    expect(() => resolveDeclaredSchedules('reports', [{ every: '1h' }, { every: '1d' }], at)).toThrow(
      `${at}: schedules[0] needs an id`,
    );
    expect(() =>
      resolveDeclaredSchedules(
        'reports',
        [
          { id: 'a', every: '1h' },
          { id: 'a', every: '1d' },
        ],
        at,
      ),
    ).toThrow(`${at} declares schedule "a" twice`);
    expect(() => resolveDeclaredSchedules('reports', [{ every: '1h', tz: 'UTC' } as never], at)).toThrow(
      `${at}: schedules[0]: unknown key "tz"`,
    );
    expect(() => resolveDeclaredSchedules('reports', [{ cron: '99 99 * * *' }], at)).toThrow(
      `${at}: schedules[0] ("reports"): invalid cron '99 99 * * *'`,
    );
    expect(() => resolveDeclaredSchedules('reports', [{ every: '1h', input: () => 1 }], at)).toThrow(
      'is not a JSON value',
    );
    expect(() => resolveDeclaredSchedules('reports', { every: '1h' }, at)).toThrow('schedules must be an array');
  });
});
