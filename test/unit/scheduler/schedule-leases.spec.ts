import { afterEach, describe, expect, it, vi } from 'vitest';
import { InMemoryWorkflowStore } from '../../../src/memory/in-memory-workflow.store.js';
import { ManualWorkflowClock } from '../../../src/time/manual-workflow-clock.js';
import { createSchedulerParts } from '../support/engine-app.js';
import { runsOf } from './schedule-runs.js';

const T = Date.parse('2026-01-01T00:00:00Z');

/** The store as a process sees it: `cut()` makes every call fail, as if the process lost the database or died. */
function reachable(store: InMemoryWorkflowStore) {
  let up = true;
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(key));
        return up ? value.apply(target, args) : Promise.reject(new Error('connection lost'));
      };
    },
  });
  return { storage: proxy, calls, cut: () => (up = false), restore: () => (up = true) };
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('schedule leases across schedulers on one store', () => {
  it('two schedulers draining at the same time start each occurrence once, and only one reports it', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(T);
    const a = createSchedulerParts({ store, clock, owner: 'a' });
    const b = createSchedulerParts({ store, clock, owner: 'b' });
    await a.admin.upsert('often', { workflow: 'reports', every: '1s', overlap: 'allow' });
    await a.admin.upsert('slow', { workflow: 'cleanup', every: '7s', overlap: 'allow' });
    for (let i = 0; i < 60; i++) {
      clock.advance('1s');
      await Promise.all([a.scheduler.drain(), b.scheduler.drain()]);
    }
    expect(await runsOf(store, 'often')).toHaveLength(60);
    expect(await runsOf(store, 'slow')).toHaveLength(8);
    const fired = [...a.events, ...b.events].filter((e) => e.type === 'schedule-fired');
    expect(fired).toHaveLength(68);
    expect(new Set(fired.map((e) => e.type === 'schedule-fired' && e.instanceId)).size).toBe(68);
  });

  it("a holder that dies keeps its schedule only until the lease lapses; the taker catches up on time, and the old holder's token writes nothing", async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(T);
    const link = reachable(store);
    const a = createSchedulerParts({ store, storage: link.storage, clock, owner: 'a' });
    const b = createSchedulerParts({ store, clock, owner: 'b' });
    await a.admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    a.scheduler.start();
    stops.push(() => a.scheduler.stop());
    clock.advance('10s');
    a.scheduler.kick();
    await vi.waitFor(async () =>
      expect(await store.getSchedule('beat')).toMatchObject({
        leaseOwner: 'a',
        leaseUntil: T + 40_000,
        wakeAt: T + 20_000,
      }),
    );
    const held = (await store.getSchedule('beat'))!.leaseToken;
    expect(held).not.toBeNull();

    link.cut(); // process a is gone
    clock.advance('10s'); // 00:20 is due, but a holds the lease until 00:40
    expect(await b.scheduler.drain()).toBe(0);
    clock.set(T + 40_001);
    expect(await b.scheduler.drain()).toBe(3); // 00:20, 00:30 and 00:40: late by less than a minute, all on time
    expect(await store.getSchedule('beat')).toMatchObject({ leaseToken: null, wakeAt: T + 50_000 });

    const before = await store.getSchedule('beat');
    link.calls.length = 0;
    link.restore(); // a comes back, still holding its old lease token and a due occurrence
    a.scheduler.kick();
    await vi.waitFor(() => expect(link.calls).toContain('claimSchedules'));
    // It re-read its held schedule (unless a pass while cut off already dropped it), found another token, and let go.
    expect(await store.getSchedule('beat')).toEqual(before);
    clock.set(T + 50_000);
    await b.scheduler.drain();
    await a.scheduler.stop();
    const runs = await runsOf(store, 'beat');
    expect(runs).toEqual(
      ['00:10', '00:20', '00:30', '00:40', '00:50'].map((mmss) => `beat@2026-01-01T00:${mmss}.000Z`),
    );
    const fired = [...a.events, ...b.events].filter((e) => e.type === 'schedule-fired');
    expect(fired).toHaveLength(5);
  });

  it('with a lease longer than a minute, the taker still starts every occurrence the dead holder kept: a takeover is no outage', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(T);
    const link = reachable(store);
    const a = createSchedulerParts({ store, storage: link.storage, clock, owner: 'a', leaseDuration: 120_000 });
    const b = createSchedulerParts({ store, clock, owner: 'b', leaseDuration: 120_000 });
    await a.admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    a.scheduler.start();
    stops.push(() => a.scheduler.stop());
    clock.advance('10s');
    a.scheduler.kick();
    await vi.waitFor(async () =>
      expect(await store.getSchedule('beat')).toMatchObject({
        leaseOwner: 'a',
        leaseUntil: T + 130_000,
        wakeAt: T + 20_000,
      }),
    );

    link.cut(); // process a is gone, holding the lease until 02:10
    clock.set(T + 130_001);
    expect(await b.scheduler.drain()).toBe(12); // 00:20 to 02:10, each late by no more than the lease
    expect(await runsOf(store, 'beat')).toHaveLength(13);
    expect(b.events.filter((e) => e.type === 'schedule-caught-up')).toEqual([]);
  });

  it('cancel-previous: a process that dies before recording its starts leaves them to the next, which cancels none of the later ones again', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(T);
    const link = reachable(store);
    // Process a starts its occurrences, then dies before it records how far it got.
    const dying = new Proxy(link.storage, {
      get: (target, key, receiver) =>
        key === 'writeSchedule' ? () => Promise.reject(new Error('killed')) : Reflect.get(target, key, receiver),
    });
    const a = createSchedulerParts({ store, storage: dying, clock, owner: 'a' });
    const b = createSchedulerParts({ store, clock, owner: 'b' });
    await a.admin.upsert('hourly', { workflow: 'reports', every: '1h', overlap: 'cancel-previous', catchup: 'all' });
    clock.set(T + 7_210_000); // 01:00 missed (caught up), 02:00 on time
    await expect(a.scheduler.drain()).rejects.toThrow('killed');
    const [first, second] = ['hourly@2026-01-01T01:00:00.000Z', 'hourly@2026-01-01T02:00:00.000Z'];
    expect(await runsOf(store, 'hourly')).toEqual([first, second]);
    expect((await store.get(first))!.cancelRequested).toBe(true);
    expect((await store.get(second))!.cancelRequested).toBe(false);

    clock.advance('31s'); // a's lease lapses; b starts over from the last recorded state
    await b.scheduler.drain();
    expect(await runsOf(store, 'hourly')).toEqual([first, second]);
    // Going over 01:00 again must not cancel 02:00, the newest run.
    expect((await store.get(second))!.cancelRequested).toBe(false);
    expect(await store.getSchedule('hourly')).toMatchObject({ leaseToken: null, wakeAt: T + 10_800_000 });
  });

  it('a change while a scheduler holds the lease takes it away: the holder re-reads and lets go', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(T);
    const a = createSchedulerParts({ store, clock, owner: 'a' });
    await a.admin.upsert('beat', { workflow: 'reports', every: '10s', overlap: 'allow' });
    a.scheduler.start();
    stops.push(() => a.scheduler.stop());
    clock.advance('10s');
    a.scheduler.kick();
    await vi.waitFor(async () => expect((await store.getSchedule('beat'))!.leaseToken).not.toBeNull());
    await a.admin.pause('beat');
    expect(await store.getSchedule('beat')).toMatchObject({ paused: true, leaseToken: null, wakeAt: null });
    clock.advance('30s');
    a.scheduler.kick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await a.scheduler.drain();
    expect(await runsOf(store, 'beat')).toEqual(['beat@2026-01-01T00:00:10.000Z']);
  });
});
