// Instances here never run (no engine): overlap 'allow' keeps an unfinished one from holding back the next.
import { describe, expect, it } from 'vitest';
import { createSchedulerParts } from '../support/engine-app.js';
import { runsOf } from './schedule-runs.js';

/** The wall-clock time in Paris of an instant, as `YYYY-MM-DD HH:mm`. */
function paris(iso: string): string {
  return new Intl.DateTimeFormat('sv-SE', { timeZone: 'Europe/Paris', dateStyle: 'short', timeStyle: 'short' }).format(
    new Date(iso),
  );
}

const occurrence = (id: string) => id.slice(id.indexOf('@') + 1);

// Europe/Paris in 2026: 02:00 CET becomes 03:00 CEST on 29 March (01:00 UTC); 03:00 CEST becomes
// 02:00 CET on 25 October (01:00 UTC).
describe('cron schedules in a time zone, on a manual clock', () => {
  it('a daily 02:30 Europe/Paris schedule from March to October starts one instance a day at 02:30 local, 03:00 on the spring-forward day', async () => {
    const h = createSchedulerParts({ start: '2026-03-27T12:00:00Z' });
    await h.admin.upsert('nightly', {
      workflow: 'reports',
      cron: '30 2 * * *',
      timezone: 'Europe/Paris',
      input: { kind: 'nightly' },
      overlap: 'allow',
    });
    const end = Date.parse('2026-10-28T12:00:00Z');
    while (h.clock.now() < end) {
      h.clock.advance('3h');
      await h.scheduler.drain();
    }
    const runs = await runsOf(h.store, 'nightly');
    expect(runs).toHaveLength(215); // 28 March to 28 October, one a day
    const around = (from: string, to: string) => runs.filter((id) => occurrence(id) >= from && occurrence(id) < to);
    expect(around('2026-03-28', '2026-03-31')).toEqual([
      'nightly@2026-03-28T01:30:00.000Z',
      'nightly@2026-03-29T01:00:00.000Z',
      'nightly@2026-03-30T00:30:00.000Z',
    ]);
    expect(around('2026-10-24', '2026-10-27')).toEqual([
      'nightly@2026-10-24T00:30:00.000Z',
      'nightly@2026-10-25T00:30:00.000Z',
      'nightly@2026-10-26T01:30:00.000Z',
    ]);
    const local = runs.map((id) => paris(occurrence(id)).slice(11));
    expect(local.filter((time) => time !== '02:30')).toEqual(['03:00']);
    const first = (await h.store.get(runs[0]!))!;
    expect(first).toMatchObject({
      workflow: 'reports',
      version: 2,
      scheduleId: 'nightly',
      scheduledAt: Date.parse('2026-03-28T01:30:00Z'),
      input: { kind: 'nightly' },
    });
    // Drained every 3 hours, each occurrence was found late and started by catchup 'latest'.
    const caughtUp = h.events.filter((e) => e.type === 'schedule-caught-up');
    expect(caughtUp).toHaveLength(215);
    expect(
      caughtUp.every((e) => e.started.length === 1 && e.missedFrom === e.missedTo && e.started[0] === e.missedTo),
    ).toBe(true);
    expect(h.errors).toEqual([]);
  });

  it('an hourly Europe/Paris schedule skips the hour that does not exist in spring and runs at both passes of the repeated hour in autumn', async () => {
    const spring = createSchedulerParts({ start: '2026-03-28T22:10:00Z' });
    await spring.admin.upsert('hourly', {
      workflow: 'reports',
      cron: '0 * * * *',
      timezone: 'Europe/Paris',
      overlap: 'allow',
    });
    for (let i = 0; i < 36; i++) {
      spring.clock.advance('10m');
      await spring.scheduler.drain();
    }
    const springRuns = await runsOf(spring.store, 'hourly');
    expect(springRuns.map(occurrence)).toEqual([
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T00:00:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T02:00:00.000Z',
      '2026-03-29T03:00:00.000Z',
      '2026-03-29T04:00:00.000Z',
    ]);
    expect(springRuns.map((id) => paris(occurrence(id)).slice(11))).toEqual([
      '00:00',
      '01:00',
      '03:00',
      '04:00',
      '05:00',
      '06:00',
    ]);

    const autumn = createSchedulerParts({ start: '2026-10-24T22:10:00Z' });
    await autumn.admin.upsert('hourly', {
      workflow: 'reports',
      cron: '0 * * * *',
      timezone: 'Europe/Paris',
      overlap: 'allow',
    });
    for (let i = 0; i < 36; i++) {
      autumn.clock.advance('10m');
      await autumn.scheduler.drain();
    }
    const autumnRuns = await runsOf(autumn.store, 'hourly');
    expect(autumnRuns.map(occurrence)).toEqual([
      '2026-10-24T23:00:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
      '2026-10-25T04:00:00.000Z',
    ]);
    expect(autumnRuns.map((id) => paris(occurrence(id)).slice(11))).toEqual([
      '01:00',
      '02:00',
      '02:00',
      '03:00',
      '04:00',
      '05:00',
    ]);
  });

  it('six fields: a cron with seconds fires at those seconds', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T00:00:00Z' });
    await h.admin.upsert('fast', { workflow: 'reports', cron: '*/20 * * * * *', overlap: 'allow' });
    for (let i = 0; i < 6; i++) {
      h.clock.advance('10s');
      await h.scheduler.drain();
    }
    expect((await runsOf(h.store, 'fast')).map(occurrence)).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
  });
});
