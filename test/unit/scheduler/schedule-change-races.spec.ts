// A change of a schedule (pause, delete, a new cadence) that lands after a scheduler (or a
// trigger) read the schedule and before it started the occurrence: once a pause or a delete has
// returned, nothing it stopped starts; an occurrence a new cadence or input stopped starts once,
// with the new definition. And a scheduler that stalls past its lease starts nothing late.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkflowNotFoundError } from '../../../src/errors/workflow-not-found.error.js';
import { InMemoryWorkflowStore } from '../../../src/memory/in-memory-workflow.store.js';
import { ManualWorkflowClock } from '../../../src/time/manual-workflow-clock.js';
import { createSchedulerParts } from '../support/engine-app.js';
import { runsOf } from './schedule-runs.js';

const T = Date.parse('2026-01-01T00:00:00Z');

/**
 * The store as a scheduler's process sees it: once `arm(change)` was called, the next instance
 * create it sends (or the next call of the method named `on`) first runs `change` to its end, so
 * the change lands between the scheduler's read of the schedule and its start. `changed` is when
 * the change returned.
 */
function interleaved(store: InMemoryWorkflowStore) {
  let change: (() => Promise<unknown>) | null = null;
  let on = 'create';
  const seen = { changed: false, creates: 0 };
  const storage = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (String(key).startsWith('create')) seen.creates++;
        if (String(key).startsWith(on)) {
          const run = change;
          change = null;
          if (run) {
            await run();
            seen.changed = true;
          }
        }
        return value.apply(target, args);
      };
    },
  });
  return {
    storage,
    seen,
    arm: (next: () => Promise<unknown>, method = 'create') => {
      change = next;
      on = method;
    },
  };
}

function setup() {
  const store = new InMemoryWorkflowStore();
  const clock = new ManualWorkflowClock(T);
  const link = interleaved(store);
  const a = createSchedulerParts({ store, clock, storage: link.storage, owner: 'a' });
  const other = createSchedulerParts({ store, clock, owner: 'b' });
  return { store, clock, link, a, admin: other.admin, other };
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('a change racing a scheduler that has read the schedule', () => {
  it('pause: once pause() has returned, the occurrence the scheduler was starting does not start, and resume starts the next one', async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    clock.advance('10s');
    link.arm(() => admin.pause('beat'));
    expect(await a.scheduler.drain()).toBe(0);
    expect(link.seen.changed).toBe(true);
    expect(await runsOf(store, 'beat')).toEqual([]);
    expect(a.events.filter((e) => e.type === 'schedule-fired')).toEqual([]);
    expect(await store.getSchedule('beat')).toMatchObject({ paused: true, leaseToken: null, wakeAt: null });
    clock.advance('5s');
    await admin.resume('beat');
    clock.advance('5s');
    expect(await a.scheduler.drain()).toBe(1);
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:20.000Z']);
  });

  it('delete: once delete() has returned, the occurrence the scheduler was starting does not start', async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    clock.advance('10s');
    link.arm(() => admin.delete('beat'));
    expect(await a.scheduler.drain()).toBe(0);
    expect(link.seen.changed).toBe(true);
    expect(await runsOf(store, 'beat')).toEqual([]);
    expect(await store.getSchedule('beat')).toBeNull();
  });

  it("a new cadence: the old cadence's due occurrence the scheduler was starting starts once, with the new definition; then the new cadence's", async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow', input: 'old' });
    clock.advance('10s');
    link.arm(() => admin.upsert('beat', { workflow: 'reports', every: '1m', overlap: 'allow', input: 'new' }));
    // The first claim loses its lease to the save; the pass claims the schedule again and starts what was owed.
    expect(await a.scheduler.drain()).toBe(1);
    expect(link.seen.changed).toBe(true);
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:10.000Z']);
    expect(await store.get('beat@2026-01-01T00:00:10.000Z')).toMatchObject({ input: 'new' });
    clock.set(T + 60_000);
    expect(await a.scheduler.drain()).toBe(1);
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:10.000Z', 'beat@2026-01-01T00:01:00.000Z']);
  });

  it('a new input alone: the occurrence still starts once, with the input saved before it started', async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow', input: 'old' });
    clock.advance('10s');
    link.arm(() => admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow', input: 'new' }));
    // The first claim loses its lease to the save; the pass claims the schedule again and starts it.
    expect(await a.scheduler.drain()).toBe(1);
    expect(link.seen.changed).toBe(true);
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:10.000Z']);
    expect(await store.get('beat@2026-01-01T00:00:10.000Z')).toMatchObject({ input: 'new' });
    expect(await store.getSchedule('beat')).toMatchObject({ leaseToken: null, wakeAt: T + 20_000 });
  });

  it('pause while a scheduler holds the schedule between occurrences and is starting the next one', async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    a.scheduler.start();
    stops.push(() => a.scheduler.stop());
    clock.advance('10s');
    a.scheduler.kick();
    await vi.waitFor(async () =>
      expect(await store.getSchedule('beat')).toMatchObject({ leaseOwner: 'a', wakeAt: T + 20_000 }),
    );
    expect((await store.getSchedule('beat'))!.leaseToken).not.toBeNull();
    link.arm(() => admin.pause('beat'));
    clock.advance('10s');
    a.scheduler.kick();
    await vi.waitFor(() => expect(link.seen.changed).toBe(true));
    await a.scheduler.stop();
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:10.000Z']);
    expect(await store.getSchedule('beat')).toMatchObject({ paused: true, leaseToken: null, wakeAt: null });
  });

  it('cancel-previous: a pause before the start cancels nothing; a start that landed before a crash cancels the earlier run when taken over', async () => {
    const { store, clock, link, a, admin, other } = setup();
    await admin.upsert('hourly', { workflow: 'reports', every: '1h', overlap: 'cancel-previous' });
    clock.set(T + 3_600_000);
    expect(await a.scheduler.drain()).toBe(1);
    const first = 'hourly@2026-01-01T01:00:00.000Z';
    clock.set(T + 7_200_000);
    link.arm(() => admin.pause('hourly'));
    expect(await a.scheduler.drain()).toBe(0);
    // The running instance goes on: the pause came first.
    expect(await runsOf(store, 'hourly')).toEqual([first]);
    expect((await store.get(first))!.cancelRequested).toBe(false);

    // Resumed, 03:00 starts; the process dies after the create, before its cancels and its schedule write.
    await admin.resume('hourly');
    clock.set(T + 10_800_000);
    const dying = new Proxy(store, {
      get: (target, key, receiver) =>
        key === 'requestCancel' || key === 'writeSchedule'
          ? () => Promise.reject(new Error('killed'))
          : Reflect.get(target, key, receiver),
    });
    const c = createSchedulerParts({ store, clock, storage: dying, owner: 'c' });
    await expect(c.scheduler.drain()).rejects.toThrow('killed');
    const third = 'hourly@2026-01-01T03:00:00.000Z';
    expect(await runsOf(store, 'hourly')).toEqual([first, third]);
    expect((await store.get(first))!.cancelRequested).toBe(false);
    clock.advance('31s'); // c's lease lapses: b goes over 03:00 again, finds it started, and cancels the earlier run
    expect(await other.scheduler.drain()).toBe(0);
    expect((await store.get(first))!.cancelRequested).toBe(true);
    expect((await store.get(third))!.cancelRequested).toBe(false);
    expect(await runsOf(store, 'hourly')).toEqual([first, third]);
  });
});

describe('trigger() racing delete()', () => {
  it('once delete() has returned, a trigger() that read the schedule before it starts nothing and throws WorkflowNotFoundError', async () => {
    const { store, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '1h' });
    link.arm(() => admin.delete('beat'));
    await expect(a.admin.trigger('beat')).rejects.toThrow(WorkflowNotFoundError);
    expect(link.seen.changed).toBe(true);
    expect(await runsOf(store, 'beat')).toEqual([]);
    expect(a.events.filter((e) => e.type === 'schedule-fired')).toEqual([]);
  });

  it('a trigger() whose start lands before a pause or with another process holding the lease still starts', async () => {
    const { store, clock, link, a, admin, other } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    link.arm(() => admin.pause('beat'));
    const paused = await a.admin.trigger('beat');
    expect(link.seen.changed).toBe(true);
    await admin.resume('beat');
    clock.advance('10s');
    await other.scheduler.drain();
    clock.advance('15s');
    const leased = await store.claimSchedules({
      owner: 'x',
      token: 'x',
      now: clock.now(),
      leaseUntil: clock.now() + 60_000,
      limit: 1,
      workflows: ['reports'],
    });
    expect(leased.map((s) => s.id)).toEqual(['beat']);
    expect(await a.admin.trigger('beat')).toBe('beat@2026-01-01T00:00:25.000Z');
    expect(await runsOf(store, 'beat')).toEqual([
      paused,
      'beat@2026-01-01T00:00:10.000Z',
      'beat@2026-01-01T00:00:25.000Z',
    ]);
  });
});

describe('a holder whose lease lapsed while nobody took the schedule over', () => {
  it('starts nothing it planned before the stall: the schedule is claimed again and catch-up decides', async () => {
    const { store, clock, link, a, admin } = setup();
    await admin.upsert('beat', { workflow: 'reports', every: '1m', catchup: 'none' });
    clock.set(T + 60_000);
    // The pass claims 00:01 (lease until 00:01:30), then stalls 4 minutes while it reads the
    // schedule's unfinished runs (an event-loop block, a GC pause, a slow pool): nobody else runs.
    link.arm(async () => clock.advance('4m'), 'list');
    expect(await a.scheduler.drain()).toBe(1);
    expect(link.seen.changed).toBe(true);
    // 00:01 to 00:04 were missed by then (catchup 'none'); 00:05 is on time.
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:05:00.000Z']);
    expect(a.events.filter((e) => e.type === 'schedule-caught-up')).toMatchObject([
      { missedFrom: T + 60_000, missedTo: T + 240_000, started: [] },
    ]);
    expect(await store.getSchedule('beat')).toMatchObject({ leaseToken: null, wakeAt: T + 360_000 });
  });
});
