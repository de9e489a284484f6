import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowSignal,
  type WorkflowContext,
  type WorkflowScheduleOptions,
} from '../../../src/index.js';
import { ManualWorkflowClock } from '../../../src/time/manual-workflow-clock.js';
import { createEngineApp, type EngineApp, type WorkflowProvider } from '../support/engine-app.js';

const done = new WorkflowSignal<string>('report.done');

@Workflow('report.quick', { schedules: [{ id: 'quick', every: '1h', input: { kind: 'hourly' } }] })
class QuickReport {
  async run(ctx: WorkflowContext, input: { kind: string }) {
    return ctx.step('render', () => `${input.kind} at ${ctx.now().toISOString()}`);
  }
}

@Workflow('report.slow')
class SlowReport {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal('finish', done, { key: ctx.id });
  }
}

const T = Date.parse('2026-01-01T00:00:00Z');
let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('schedules in an application (manual clock, worker off)', () => {
  it('a declared schedule is stored at startup; drain() starts its due occurrence and runs it; client.list({ scheduleId }) lists its runs', async () => {
    app = await createEngineApp({ workflows: [QuickReport] });
    const { schedules } = app;
    expect(await schedules.get('quick')).toMatchObject({
      workflow: 'report.quick',
      declared: true,
      every: 3_600_000,
      input: { kind: 'hourly' },
      nextAt: T + 3_600_000,
    });
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('1h');
    expect(await app.worker.drain()).toBe(1);
    const runs = await app.client.list({ scheduleId: 'quick' });
    expect(runs).toMatchObject([
      {
        id: 'quick@2026-01-01T01:00:00.000Z',
        status: 'completed',
        output: 'hourly at 2026-01-01T01:00:00.000Z',
        scheduleId: 'quick',
        scheduledAt: T + 3_600_000,
      },
    ]);
    expect(app.events.map((e) => e.type)).toEqual([
      'schedule-fired',
      'workflow-started',
      'step-completed',
      'workflow-completed',
    ]);
    app.clock.advance('1h');
    await app.worker.drain();
    expect((await app.client.list({ scheduleId: 'quick' })).map((r) => r.id)).toEqual([
      'quick@2026-01-01T01:00:00.000Z',
      'quick@2026-01-01T02:00:00.000Z',
    ]);
    expect(await app.client.list({ scheduleId: 'other' })).toEqual([]);
  });

  it("overlap 'skip' holds back the next occurrence while a run waits; after it ends the following one starts", async () => {
    app = await createEngineApp({ workflows: [SlowReport] });
    const { schedules } = app;
    await schedules.upsert('slow', { workflow: SlowReport, every: '10m' });
    app.clock.advance('10m');
    await app.worker.drain();
    app.clock.advance('10m');
    await app.worker.drain();
    const skipped = app.events.filter((e) => e.type === 'schedule-skipped');
    expect(skipped).toMatchObject([
      { scheduleId: 'slow', scheduledAt: T + 1_200_000, running: 'slow@2026-01-01T00:10:00.000Z' },
    ]);
    await app.client.signal(done, 'ok', { key: 'slow@2026-01-01T00:10:00.000Z' });
    await app.worker.drain();
    app.clock.advance('10m');
    await app.worker.drain();
    const runs = await app.client.list({ scheduleId: 'slow' });
    expect(runs.map((r) => [r.id, r.status])).toEqual([
      ['slow@2026-01-01T00:10:00.000Z', 'completed'],
      ['slow@2026-01-01T00:30:00.000Z', 'suspended'],
    ]);
  });

  it("overlap 'cancel-previous' cancels the waiting run when the next occurrence starts; 'allow' lets them run side by side", async () => {
    app = await createEngineApp({ workflows: [SlowReport] });
    const { schedules } = app;
    await schedules.upsert('cancelling', { workflow: 'report.slow', every: '10m', overlap: 'cancel-previous' });
    await schedules.upsert('allowing', { workflow: 'report.slow', every: '10m', overlap: 'allow' });
    for (let i = 0; i < 3; i++) {
      app.clock.advance('10m');
      await app.worker.drain();
    }
    const status = async (scheduleId: string) => (await app!.client.list({ scheduleId })).map((r) => r.status);
    expect(await status('cancelling')).toEqual(['cancelled', 'cancelled', 'suspended']);
    expect(await status('allowing')).toEqual(['suspended', 'suspended', 'suspended']);
    const first = await app.client.getStatus('cancelling@2026-01-01T00:10:00.000Z');
    expect(first.error).toMatchObject({ name: 'WorkflowCancelledError' });
  });

  it('trigger() starts one now and returns its handle; pause, resume and delete through WorkflowSchedules', async () => {
    app = await createEngineApp({ workflows: [QuickReport] });
    const { schedules } = app;
    const runtime = await schedules.upsert('adhoc', {
      workflow: QuickReport,
      cron: '0 12 * * *',
      timezone: 'America/New_York',
      input: { kind: 'adhoc' },
    });
    expect(runtime).toMatchObject({
      declared: false,
      workflow: 'report.quick',
      nextAt: Date.parse('2026-01-01T17:00:00Z'),
    });
    app.clock.advance('5m');
    const handle = await schedules.trigger<string>('adhoc');
    expect(handle.id).toBe('adhoc@2026-01-01T00:05:00.000Z');
    await app.worker.drain();
    expect(await handle.result()).toBe('adhoc at 2026-01-01T00:05:00.000Z');
    expect(app.events.find((e) => e.type === 'schedule-fired')).toMatchObject({
      scheduleId: 'adhoc',
      triggered: true,
      instanceId: handle.id,
    });
    await schedules.pause('quick');
    app.clock.set(new Date('2026-01-01T18:00:00Z'));
    await app.worker.drain();
    expect((await app.client.list({ scheduleId: 'quick' })).length).toBe(0);
    expect((await app.client.list({ scheduleId: 'adhoc' })).length).toBe(2);
    await schedules.resume('quick');
    app.clock.advance('1h');
    await app.worker.drain();
    expect((await app.client.list({ scheduleId: 'quick' })).map((r) => r.id)).toEqual([
      'quick@2026-01-01T19:00:00.000Z',
    ]);
    await schedules.delete('adhoc');
    expect((await schedules.list()).map((s) => s.id)).toEqual(['quick']);
    await expect(schedules.upsert('x', { workflow: 'report.unknown', every: '1h' })).rejects.toThrow(
      'No workflow "report.unknown" is declared',
    );
    await expect(schedules.upsert('x', { workflow: QuickReport, cron: '99 99 * * *' })).rejects.toThrow(
      `invalid cron '99 99 * * *'`,
    );
  });

  it('refuses to start with a bad declared schedule, quoting the expression or zone', async () => {
    const boot = async (schedules: WorkflowScheduleOptions[]) => {
      @Workflow('report.bad', { schedules })
      class Bad {
        async run() {}
      }
      const started = await createEngineApp({ workflows: [Bad] });
      await started.close();
    };
    await expect(boot([{ cron: '99 99 * * *' }])).rejects.toThrow(
      `@Workflow('report.bad') on Bad: schedules[0] ("report.bad"): invalid cron '99 99 * * *'`,
    );
    await expect(boot([{ cron: '0 * * * *', timezone: 'Moon/Tranquility' }])).rejects.toThrow(
      "unknown timezone 'Moon/Tranquility'",
    );
  });
});

describe('reconciliation across deployments of the same store', () => {
  const clock = new ManualWorkflowClock(T);
  const deploy = (store: InMemoryWorkflowStore, workflows: WorkflowProvider[]) =>
    createEngineApp({ workflows, store, clock });
  const declare = (schedules: WorkflowScheduleOptions[]) => {
    @Workflow('billing.run', { schedules })
    class Billing {
      async run() {
        return 'billed';
      }
    }
    return Billing;
  };

  it('adds, changes and removes declared schedules as the code says; runtime schedules and pauses stand', async () => {
    const store = new InMemoryWorkflowStore();
    let deployed = await deploy(store, [
      declare([
        { id: 'daily', cron: '0 6 * * *' },
        { id: 'weekly', cron: '0 6 * * 1' },
      ]),
    ]);
    let schedules = deployed.schedules;
    await schedules.upsert('manual', { workflow: 'billing.run', every: '1d' });
    await schedules.pause('weekly');
    expect((await schedules.list()).map((s) => [s.id, s.declared, s.paused])).toEqual([
      ['daily', true, false],
      ['manual', false, false],
      ['weekly', true, true],
    ]);
    await deployed.close();

    clock.set(Date.parse('2026-01-01T03:00:00Z'));
    deployed = await deploy(store, [
      declare([
        { id: 'daily', cron: '0 7 * * *', input: { v: 2 } },
        { id: 'weekly', cron: '0 6 * * 1' },
        { id: 'monthly', cron: '0 6 1 * *' },
      ]),
    ]);
    schedules = deployed.schedules;
    expect(await schedules.get('daily')).toMatchObject({
      cron: '0 7 * * *',
      input: { v: 2 },
      nextAt: Date.parse('2026-01-01T07:00:00Z'),
      declared: true,
    });
    expect(await schedules.get('weekly')).toMatchObject({ paused: true }); // paused at run time, unchanged in code
    expect(await schedules.get('monthly')).toMatchObject({
      declared: true,
      nextAt: Date.parse('2026-01-01T06:00:00Z'),
    });
    await deployed.close();

    deployed = await deploy(store, [declare([{ id: 'daily', cron: '0 7 * * *', input: { v: 2 }, paused: true }])]);
    schedules = deployed.schedules;
    expect((await schedules.list()).map((s) => [s.id, s.declared, s.paused])).toEqual([
      ['daily', true, true],
      ['manual', false, false],
    ]);
    await deployed.close();

    // A declared id that a runtime schedule already uses refuses to start, saying what to do.
    await expect(deploy(store, [declare([{ id: 'manual', every: '1h' }])])).rejects.toThrow(
      `Schedule "manual" declared on @Workflow('billing.run') already exists as a schedule created at run time`,
    );
  });
});

describe('with the background worker on', () => {
  it('starts occurrences as the manual clock moves, without drain(), and stops with the worker at shutdown', async () => {
    const clock = new ManualWorkflowClock(T);
    const store = new InMemoryWorkflowStore();
    const running = await createEngineApp({ workflows: [QuickReport], store, clock, worker: { enabled: true } });
    const { client, events } = running;
    clock.advance('1h');
    await vi.waitFor(async () =>
      expect((await client.list({ scheduleId: 'quick', status: 'completed' })).length).toBe(1),
    );
    // Its next occurrence is an hour away, more than half a lease: handed back, not held.
    expect(await store.getSchedule('quick')).toMatchObject({ leaseToken: null, wakeAt: T + 7_200_000 });
    await running.close();
    clock.advance('1h');
    expect(await running.worker.drain()).toBe(0);
    expect((await store.list({ scheduleId: 'quick', limit: 10, offset: 0 })).length).toBe(1);
    expect(events.filter((e) => e.type === 'schedule-fired')).toHaveLength(1);
  });

  it('holds a frequent schedule between occurrences and hands it back at shutdown', async () => {
    const clock = new ManualWorkflowClock(T);
    const store = new InMemoryWorkflowStore();
    @Workflow('tick', { schedules: [{ every: '5s', overlap: 'allow' }] })
    class Tick {
      async run() {
        return 1;
      }
    }
    const running = await createEngineApp({ workflows: [Tick], store, clock, worker: { id: 'proc-a' } });
    clock.advance('5s');
    await vi.waitFor(async () =>
      expect(await store.getSchedule('tick')).toMatchObject({
        leaseOwner: 'proc-a',
        wakeAt: T + 10_000,
        leaseUntil: T + 35_000,
      }),
    );
    expect((await store.getSchedule('tick'))!.leaseToken).not.toBeNull();
    clock.advance('5s');
    await vi.waitFor(async () =>
      expect(await store.list({ scheduleId: 'tick', limit: 10, offset: 0 })).toHaveLength(2),
    );
    await running.close();
    expect(await store.getSchedule('tick')).toMatchObject({ leaseToken: null, leaseUntil: null });
  });
});
