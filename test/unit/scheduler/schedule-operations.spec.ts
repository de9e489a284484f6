// Instances here never run (no engine): overlap 'allow' keeps an unfinished one from holding back the next.
import { describe, expect, it } from 'vitest';
import {
  isWorkflowInputError,
  workflowErrorStatus,
  WorkflowInvalidStateError,
  WorkflowNotFoundError,
} from '../../../src/index.js';
import { createSchedulerParts } from '../support/engine-app.js';
import { runsOf } from './schedule-runs.js';

const T = Date.parse('2026-01-01T00:00:00Z');
const occurrence = (id: string) => id.slice(id.indexOf('@') + 1);

describe('every schedules', () => {
  it('fire on whole multiples of the interval since the epoch, each occurrence once however often it drains', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T10:07:00Z' });
    const info = await h.admin.upsert('quarter', { workflow: 'reports', every: '15m', overlap: 'allow', input: 7 });
    expect(info).toMatchObject({
      id: 'quarter',
      workflow: 'reports',
      every: 900_000,
      cron: null,
      declared: false,
      paused: false,
      nextAt: Date.parse('2026-01-01T10:15:00Z'),
    });
    expect(await h.scheduler.drain()).toBe(0);
    h.clock.set(new Date('2026-01-01T10:15:00Z'));
    expect(await h.scheduler.drain()).toBe(1);
    expect(await h.scheduler.drain()).toBe(0);
    h.clock.advance('14m');
    expect(await h.scheduler.drain()).toBe(0);
    h.clock.advance('1m');
    expect(await h.scheduler.drain()).toBe(1);
    expect(await runsOf(h.store, 'quarter')).toEqual([
      'quarter@2026-01-01T10:15:00.000Z',
      'quarter@2026-01-01T10:30:00.000Z',
    ]);
    expect(await h.store.get('quarter@2026-01-01T10:30:00.000Z')).toMatchObject({
      input: 7,
      scheduleId: 'quarter',
      scheduledAt: Date.parse('2026-01-01T10:30:00Z'),
      status: 'pending',
    });
    expect(h.events.map((e) => e.type)).toEqual(['schedule-fired', 'schedule-fired']);
    expect(h.events[1]).toEqual({
      type: 'schedule-fired',
      scheduleId: 'quarter',
      workflow: 'reports',
      at: Date.parse('2026-01-01T10:30:00Z'),
      scheduledAt: Date.parse('2026-01-01T10:30:00Z'),
      instanceId: 'quarter@2026-01-01T10:30:00.000Z',
      triggered: false,
    });
    expect(await h.admin.get('quarter')).toMatchObject({
      lastStartedId: 'quarter@2026-01-01T10:30:00.000Z',
      nextAt: Date.parse('2026-01-01T10:45:00Z'),
    });
  });
});

describe('catch-up after downtime', () => {
  async function downtime(catchup: 'latest' | 'all' | 'none', catchupWindow?: string) {
    const h = createSchedulerParts({ start: '2026-01-01T00:00:00Z' });
    await h.admin.upsert('hourly', {
      workflow: 'reports',
      every: '1h',
      overlap: 'allow',
      catchup,
      ...(catchupWindow ? { catchupWindow } : {}),
    });
    h.clock.set(new Date('2026-01-01T05:30:00Z')); // 01:00 to 05:00 missed
    await h.scheduler.drain();
    return { h, runs: (await runsOf(h.store, 'hourly')).map(occurrence) };
  }

  it('latest (the default): one start for the most recent missed occurrence, and a caught-up event', async () => {
    const { h, runs } = await downtime('latest');
    expect(runs).toEqual(['2026-01-01T05:00:00.000Z']);
    expect(h.events.map((e) => e.type)).toEqual(['schedule-caught-up', 'schedule-fired']);
    expect(h.events[0]).toEqual({
      type: 'schedule-caught-up',
      scheduleId: 'hourly',
      workflow: 'reports',
      at: Date.parse('2026-01-01T05:30:00Z'),
      catchup: 'latest',
      missedFrom: Date.parse('2026-01-01T01:00:00Z'),
      missedTo: Date.parse('2026-01-01T05:00:00Z'),
      started: [Date.parse('2026-01-01T05:00:00Z')],
    });
    h.clock.set(new Date('2026-01-01T06:00:00Z'));
    await h.scheduler.drain();
    expect((await runsOf(h.store, 'hourly')).map(occurrence)).toEqual([
      '2026-01-01T05:00:00.000Z',
      '2026-01-01T06:00:00.000Z',
    ]);
  });

  it('all: every missed occurrence within the window, oldest first', async () => {
    expect((await downtime('all')).runs).toEqual(
      ['01', '02', '03', '04', '05'].map((hh) => `2026-01-01T${hh}:00:00.000Z`),
    );
    expect((await downtime('all', '2h')).runs).toEqual(['2026-01-01T04:00:00.000Z', '2026-01-01T05:00:00.000Z']);
  });

  it('none: missed occurrences start nothing; the next one does', async () => {
    const { h, runs } = await downtime('none');
    expect(runs).toEqual([]);
    expect(h.events).toMatchObject([{ type: 'schedule-caught-up', catchup: 'none', started: [] }]);
    h.clock.set(new Date('2026-01-01T06:00:30Z'));
    await h.scheduler.drain();
    expect((await runsOf(h.store, 'hourly')).map(occurrence)).toEqual(['2026-01-01T06:00:00.000Z']);
  });

  it('all over a long outage of a frequent schedule: every occurrence once, in passes of at most 100', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T00:00:00Z' });
    await h.admin.upsert('often', { workflow: 'reports', every: '1m', overlap: 'allow', catchup: 'all' });
    h.clock.advance('5h');
    expect(await h.scheduler.drain()).toBe(300);
    const runs = await runsOf(h.store, 'often');
    expect(new Set(runs).size).toBe(300);
    expect(runs.at(-1)).toBe('often@2026-01-01T05:00:00.000Z');
  });
});

describe('overlap on the scheduler side', () => {
  it('skip (the default): no start while one it started is unfinished, with a skipped event naming it', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T00:00:00Z' });
    await h.admin.upsert('minutely', { workflow: 'reports', every: '1m' });
    h.clock.advance('1m');
    await h.scheduler.drain();
    h.clock.advance('1m');
    await h.scheduler.drain();
    expect(await runsOf(h.store, 'minutely')).toEqual(['minutely@2026-01-01T00:01:00.000Z']);
    expect(h.events.at(-1)).toEqual({
      type: 'schedule-skipped',
      scheduleId: 'minutely',
      workflow: 'reports',
      at: T + 120_000,
      scheduledAt: T + 120_000,
      reason: 'overlap',
      running: 'minutely@2026-01-01T00:01:00.000Z',
    });
  });

  it('cancel-previous: asks the unfinished one to cancel, then starts the next', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T00:00:00Z' });
    await h.admin.upsert('minutely', { workflow: 'reports', every: '1m', overlap: 'cancel-previous' });
    h.clock.advance('1m');
    await h.scheduler.drain();
    h.clock.advance('1m');
    await h.scheduler.drain();
    expect(await runsOf(h.store, 'minutely')).toEqual([
      'minutely@2026-01-01T00:01:00.000Z',
      'minutely@2026-01-01T00:02:00.000Z',
    ]);
    expect(await h.store.get('minutely@2026-01-01T00:01:00.000Z')).toMatchObject({
      cancelRequested: true,
      cancelReason: 'Schedule "minutely" started minutely@2026-01-01T00:02:00.000Z (overlap: \'cancel-previous\').',
    });
    expect((await h.store.get('minutely@2026-01-01T00:02:00.000Z'))!.cancelRequested).toBe(false);
  });
});

describe('WorkflowSchedules operations (framework-free)', () => {
  it('pause stops starts; resume starts again from the next occurrence, without catching up the paused ones', async () => {
    const h = createSchedulerParts();
    await h.admin.upsert('hourly', { workflow: 'reports', every: '1h', overlap: 'allow' });
    h.clock.advance('1h');
    await h.scheduler.drain();
    expect(await h.admin.pause('hourly')).toMatchObject({ paused: true, nextAt: null });
    expect(await h.admin.pause('hourly')).toMatchObject({ paused: true });
    h.clock.advance('3h');
    expect(await h.scheduler.drain()).toBe(0);
    h.clock.advance('10m'); // 04:10
    expect(await h.admin.resume('hourly')).toMatchObject({ paused: false, nextAt: Date.parse('2026-01-01T05:00:00Z') });
    expect(await h.scheduler.drain()).toBe(0);
    h.clock.set(new Date('2026-01-01T05:00:00Z'));
    expect(await h.scheduler.drain()).toBe(1);
    expect((await runsOf(h.store, 'hourly')).map(occurrence)).toEqual([
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T05:00:00.000Z',
    ]);
  });

  it('trigger starts one now outside the cadence, even paused and while another runs; the cadence is unchanged', async () => {
    const h = createSchedulerParts();
    await h.admin.upsert('hourly', { workflow: 'reports', every: '1h', input: { n: 1 }, paused: true });
    h.clock.advance('10m');
    const id = await h.admin.trigger('hourly');
    expect(id).toBe('hourly@2026-01-01T00:10:00.000Z');
    h.clock.advance('1m');
    expect(await h.admin.trigger('hourly')).toBe('hourly@2026-01-01T00:11:00.000Z');
    expect(await h.store.get(id)).toMatchObject({
      scheduleId: 'hourly',
      scheduledAt: T + 600_000,
      input: { n: 1 },
      version: 2,
    });
    expect(
      h.events.filter((e) => e.type === 'schedule-fired').map((e) => e.type === 'schedule-fired' && e.triggered),
    ).toEqual([true, true]);
    await expect(h.admin.trigger('missing')).rejects.toThrow(WorkflowNotFoundError);
    await h.admin.resume('hourly');
    h.clock.set(new Date('2026-01-01T01:00:00Z'));
    await h.scheduler.drain();
    expect((await runsOf(h.store, 'hourly')).length).toBe(2); // skip: the triggered ones are unfinished
  });

  it('upsert replaces a runtime schedule: a new cadence counts from now, a new input keeps the cadence', async () => {
    const h = createSchedulerParts();
    await h.admin.upsert('job', { workflow: 'reports', every: '1h', overlap: 'allow' });
    h.clock.advance('30m');
    const changedInput = await h.admin.upsert('job', {
      workflow: 'reports',
      every: '1h',
      overlap: 'allow',
      input: 'v2',
    });
    expect(changedInput).toMatchObject({ input: 'v2', nextAt: T + 3_600_000 });
    const changedCadence = await h.admin.upsert('job', { workflow: 'cleanup', cron: '*/45 * * * *', overlap: 'allow' });
    expect(changedCadence).toMatchObject({
      workflow: 'cleanup',
      cron: '*/45 * * * *',
      every: null,
      nextAt: T + 45 * 60_000,
    });
    h.clock.advance('15m');
    await h.scheduler.drain();
    expect(await h.store.get('job@2026-01-01T00:45:00.000Z')).toMatchObject({ workflow: 'cleanup', input: null });
  });

  it('upsert refuses bad input with an error quoting it, and stores nothing', async () => {
    const h = createSchedulerParts();
    await expect(h.admin.upsert('bad', { workflow: 'reports', cron: '99 99 * * *' })).rejects.toThrow(
      `Schedule "bad": invalid cron '99 99 * * *'`,
    );
    await expect(
      h.admin.upsert('bad', { workflow: 'reports', cron: '0 * * * *', timezone: 'Europe/Atlantis' }),
    ).rejects.toThrow(`Schedule "bad": unknown timezone 'Europe/Atlantis'`);
    await expect(h.admin.upsert('bad', { workflow: 'reports', every: '1h', input: { n: 1n } })).rejects.toThrow(
      'is not a JSON value',
    );
    await expect(h.admin.upsert('bad', { workflow: 'reports', every: '1h', cronn: 'x' } as never)).rejects.toThrow(
      'unknown option "cronn"',
    );
    await expect(h.admin.upsert('', { workflow: 'reports', every: '1h' })).rejects.toThrow('Invalid schedule id ""');
    await expect(h.admin.upsert('bad', { workflow: 'nope', every: '1h' })).rejects.toThrow('unknown workflow nope');
    expect(await h.admin.get('bad')).toBeNull();
    expect(await h.admin.list()).toEqual([]);
  });

  it('delete removes a runtime schedule and keeps the instances it started; get and list read them', async () => {
    const h = createSchedulerParts();
    await h.admin.upsert('b', { workflow: 'reports', every: '1h', overlap: 'allow' });
    await h.admin.upsert('a', { workflow: 'cleanup', cron: '0 0 * * *', timezone: 'Asia/Tokyo' });
    expect((await h.admin.list()).map((s) => s.id)).toEqual(['a', 'b']);
    expect((await h.admin.list({ workflow: 'cleanup' })).map((s) => s.id)).toEqual(['a']);
    expect(await h.admin.list({ limit: 1, offset: 1 })).toMatchObject([{ id: 'b' }]);
    expect(await h.admin.get('a')).toMatchObject({
      timezone: 'Asia/Tokyo',
      overlap: 'skip',
      catchup: 'latest',
      catchupWindow: 86_400_000,
      nextAt: Date.parse('2026-01-01T15:00:00Z'),
    });
    h.clock.advance('1h');
    await h.scheduler.drain();
    await h.admin.delete('b');
    expect(await h.admin.get('b')).toBeNull();
    await expect(h.admin.delete('b')).rejects.toThrow(new WorkflowNotFoundError('No schedule has the id "b".'));
    h.clock.advance('1h');
    await h.scheduler.drain();
    expect(await runsOf(h.store, 'b')).toEqual(['b@2026-01-01T01:00:00.000Z']);
    await expect(h.admin.list({ limit: 0 })).rejects.toThrow('Use a whole number from 1 to 1000');
  });

  it('a declared schedule can be paused, resumed and triggered, but not replaced or deleted at run time', async () => {
    const h = createSchedulerParts();
    const { reconcileSchedules } = await import('../../../src/scheduler/schedule-reconciler.js');
    const { resolveDeclaredSchedules } = await import('../../../src/scheduler/declared-schedule.js');
    await reconcileSchedules(
      h.store,
      resolveDeclaredSchedules('reports', [{ id: 'nightly', cron: '0 3 * * *' }], 'x'),
      ['reports'],
      h.clock.now(),
    );
    await expect(h.admin.upsert('nightly', { workflow: 'reports', every: '1h' })).rejects.toThrow(
      WorkflowInvalidStateError,
    );
    await expect(h.admin.delete('nightly')).rejects.toThrow(
      "Schedule \"nightly\" is declared on @Workflow('reports') and can't be deleted at run time: change or remove it in the code",
    );
    expect(await h.admin.pause('nightly')).toMatchObject({ paused: true, declared: true });
    expect(await h.admin.trigger('nightly')).toBe('nightly@2026-01-01T00:00:00.000Z');
  });

  it('delete removes a declared schedule left behind by a workflow no application declares any more', async () => {
    const old = createSchedulerParts({ workflows: ['legacy'] });
    const { reconcileSchedules } = await import('../../../src/scheduler/schedule-reconciler.js');
    const { resolveDeclaredSchedules } = await import('../../../src/scheduler/declared-schedule.js');
    await reconcileSchedules(
      old.store,
      resolveDeclaredSchedules('legacy', [{ every: '1h' }], 'x'),
      ['legacy'],
      old.clock.now(),
    );
    const now = createSchedulerParts({ store: old.store, clock: old.clock, workflows: ['reports'] });
    await now.admin.delete('legacy');
    expect(await now.admin.get('legacy')).toBeNull();
  });
});

describe('bad schedule arguments', () => {
  it('are input errors (the exception filter answers 400), and store nothing', async () => {
    const h = createSchedulerParts({ start: '2026-01-01T10:07:00Z' });
    const refused = async (call: () => Promise<unknown>): Promise<unknown> =>
      call().then(
        () => expect.fail('accepted'),
        (error: unknown) => error,
      );
    const errors = [
      await refused(() => h.admin.upsert('', { workflow: 'reports', every: '1m' })),
      await refused(() => h.admin.upsert('bad-cron', { workflow: 'reports', cron: '99 99 * * *' })),
      await refused(() =>
        h.admin.upsert('bad-zone', { workflow: 'reports', cron: '0 * * * *', timezone: 'Mars/Olympus' }),
      ),
      await refused(() => h.admin.upsert('bad-key', { workflow: 'reports', every: '1m', evry: '1m' } as never)),
      await refused(() => h.admin.list({ limit: 0 })),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(Error);
      expect(isWorkflowInputError(error), String(error)).toBe(true);
      expect(workflowErrorStatus(error)).toBe(400);
    }
    expect(await h.admin.list()).toEqual([]);
  });
});
