// Spans and metrics through the OpenTelemetry API, checked with the SDK's in-memory exporters: one
// trace per instance joined to the start() caller's, across suspensions and children; step,
// compensation and child spans active while their code runs; every metric of docs/observability.md.
import { Injectable } from '@nestjs/common';
import { trace, type Span } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Test } from '@nestjs/testing';
import {
  InMemoryWorkflowStore,
  ManualWorkflowClock,
  NonRetryableError,
  Workflow,
  WorkflowClient,
  WorkflowEvents,
  WorkflowSignal,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
  type WorkflowDefinition,
} from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { installOpenTelemetry } from './otel-setup.js';

const otel = installOpenTelemetry();
const app_ = trace.getTracer('the-app');
const approved = new WorkflowSignal<{ by: string }>('tel.approved');

@Injectable()
class Switches {
  failCharge = false;
  steal: (() => Promise<void>) | null = null;
}

@Workflow('tel.kid')
class Kid implements WorkflowDefinition<number, number> {
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('double', () => n * 2);
  }
}

@Workflow('tel.order')
class Order implements WorkflowDefinition<string, number> {
  constructor(private readonly switches: Switches) {}
  async run(ctx: WorkflowContext, order: string) {
    await ctx.step(
      'reserve',
      () => {
        // A span the step's own code makes nests under the step's span.
        app_.startSpan('inside reserve').end();
        return order;
      },
      { compensate: () => undefined },
    );
    await ctx.sleep('nap', '1m');
    const doubled = await ctx.executeChild('kid', Kid, 21);
    await ctx.step('charge', () => {
      if (this.switches.failCharge) throw new NonRetryableError('declined');
      return doubled;
    });
    return doubled;
  }
}

@Workflow('tel.flaky')
class Flaky implements WorkflowDefinition<null, string> {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'try',
      ({ attempt }) => {
        if (attempt < 2) throw new Error(`attempt ${attempt} failed`);
        return 'ok';
      },
      { retry: { attempts: 3, backoff: '1s' } },
    );
  }
}

@Workflow('tel.waits')
class Waits implements WorkflowDefinition<null, string> {
  async run(ctx: WorkflowContext) {
    return (await ctx.waitForSignal('approval', approved)).by;
  }
}

@Workflow('tel.stolen')
class Stolen implements WorkflowDefinition<null, string> {
  constructor(private readonly switches: Switches) {}
  async run(ctx: WorkflowContext) {
    return ctx.step('slow', async () => {
      await this.switches.steal?.();
      return 'late';
    });
  }
}

@Workflow('tel.mailing')
class Mailing implements WorkflowDefinition<number, number> {
  async run(ctx: WorkflowContext, users: number) {
    // Named by the item, as docs/workflows.md says to in a loop: one name per user.
    for (let user = 1; user <= users; user++) await ctx.step(`email-${user}`, () => user);
    return users;
  }
}

let app: TestApp;
beforeEach(() => otel.resetSpans());
afterEach(async () => app?.close());

const named = (name: string) => otel.spans().filter((s) => s.name === name);
const one = (name: string) => {
  const found = named(name);
  expect(
    found.map((s) => s.name),
    `spans named ${name}`,
  ).toEqual([name]);
  return found[0]!;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('telemetry (OpenTelemetry SDK, in-memory exporters)', () => {
  it('one trace per instance, under the start() caller: executions across a sleep, steps, a child and its executions', async () => {
    app = await createTestApp([Switches, Kid, Order]);
    let caller!: Span;
    await app_.startActiveSpan('http POST /orders', async (span) => {
      caller = span;
      await app.client.start(Order, 'o-1', { id: 'o-1' });
      span.end();
    });
    const traceId = caller.spanContext().traceId;
    const stored = (await app.client.getStatus('o-1')).traceContext;
    expect(stored?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    await app.worker.drain(); // reserve, then the nap
    app.clock.advance('1m');
    await app.worker.drain(); // the child, the parent waits; the child runs; the parent charges
    expect((await app.client.getStatus('o-1')).status).toBe('completed');

    const start = one('workflow.start tel.order');
    expect(start.spanContext().traceId).toBe(traceId);
    expect(parentOf(start)).toBe(caller.spanContext().spanId);
    expect(start.attributes['workflow.instance.id']).toBe('o-1');

    const executions = named('workflow.execute tel.order');
    expect(executions.length).toBeGreaterThanOrEqual(3); // first run, after the nap, after the child ended
    for (const execution of executions) {
      expect(execution.spanContext().traceId).toBe(traceId);
      expect(parentOf(execution)).toBe(start.spanContext().spanId);
      expect(execution.attributes['workflow.instance.id']).toBe('o-1');
    }
    expect(executions.map((e) => e.attributes['workflow.run'])).toEqual(executions.map((_, i) => i + 1));
    expect(executions[0]!.attributes['workflow.outcome']).toBe('suspended');
    expect(executions.at(-1)!.attributes['workflow.outcome']).toBe('completed');

    const reserve = one('workflow.step reserve');
    expect(parentOf(reserve)).toBe(executions[0]!.spanContext().spanId);
    expect(reserve.attributes).toMatchObject({
      'workflow.step.name': 'reserve',
      'workflow.attempt': 1,
      'workflow.instance.id': 'o-1',
    });
    expect(parentOf(one('inside reserve'))).toBe(reserve.spanContext().spanId);

    // The child: its start span is inside the parent's child span, and its executions under that.
    const childSpan = one('workflow.child kid');
    expect(executions.map((e) => e.spanContext().spanId)).toContain(parentOf(childSpan));
    const kidStart = one('workflow.start tel.kid');
    expect(parentOf(kidStart)).toBe(childSpan.spanContext().spanId);
    const kidRun = one('workflow.execute tel.kid');
    expect(kidRun.spanContext().traceId).toBe(traceId);
    expect(parentOf(kidRun)).toBe(kidStart.spanContext().spanId);
    expect(kidRun.attributes['workflow.instance.id']).toBe('o-1/kid');
    expect(parentOf(one('workflow.step double'))).toBe(kidRun.spanContext().spanId);
  });

  it('a failed attempt and a compensation are spans with an error status; the execution says how it ended', async () => {
    app = await createTestApp([Switches, Kid, Order, Flaky]);
    app.module.get(Switches).failCharge = true;
    await app.client.start(Order, 'o-2', { id: 'o-2' });
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    expect((await app.client.getStatus('o-2')).status).toBe('failed');
    const charge = one('workflow.step charge');
    expect(charge.status).toMatchObject({ code: 2, message: 'NonRetryableError: declined' });
    expect(charge.events.map((e) => e.name)).toContain('exception');
    const compensation = one('workflow.compensation reserve');
    expect(compensation.attributes['workflow.compensation.name']).toBe('reserve');
    const last = named('workflow.execute tel.order').at(-1)!;
    expect(last.attributes['workflow.outcome']).toBe('failed');
    expect(last.status.code).toBe(2);

    await app.client.start(Flaky, null, { id: 'f-1' });
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    expect(named('workflow.step try').map((s) => [s.attributes['workflow.attempt'], s.status.code])).toEqual([
      [1, 2],
      [2, 0],
    ]);
  });

  it('metrics: starts, ends, step durations, claim latency, due backlog, lease losses, signal delivery latency', async () => {
    app = await createTestApp([Switches, Kid, Order, Flaky, Waits, Stolen]);
    const switches = app.module.get(Switches);
    // Counters are cumulative over this file's tests: count what this test adds.
    const baseline = await otel.collect();
    for (const id of ['w-1', 'w-2', 'w-3']) await app.client.start(Waits, null, { id });
    expect((await otel.collect()).get('workflows.backlog.due')?.[0]?.value).toBe(3);
    app.clock.advance('5s');
    await app.worker.drain();
    let points = await otel.collect();
    expect(points.get('workflows.backlog.due')?.[0]?.value).toBe(0);
    // tel.waits appears in no other test, so its histogram is this test's alone.
    const claim = points.get('workflows.claim.latency')!.find((p) => p.attributes['workflow.name'] === 'tel.waits')!
      .value as { count: number; min?: number; max?: number };
    expect(claim).toMatchObject({ count: 3, min: 5000, max: 5000 });

    await app.client.signal(approved, { by: 'ann' });
    app.clock.advance('2s');
    await app.worker.drain();
    points = await otel.collect();
    const delivery = points
      .get('workflows.signal.delivery_latency')!
      .find((p) => p.attributes['workflow.signal.name'] === 'tel.approved')!.value as {
      count: number;
      min?: number;
      max?: number;
    };
    expect(delivery).toMatchObject({ count: 3, min: 2000, max: 2000 });

    await app.client.start(Flaky, null, { id: 'f-1' });
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    switches.failCharge = true;
    await app.client.start(Order, 'o-3', { id: 'o-3' });
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();

    // Another worker takes the lease while the step runs (this one's lapsed): the write is refused.
    switches.steal = async () => {
      app.clock.advance('1m');
      const now = app.clock.now();
      const taken = await app.store.claim({
        owner: 'thief',
        token: 'stolen',
        now,
        leaseUntil: now + 60_000,
        limit: 10,
        workflows: [{ name: 'tel.stolen', version: 1 }],
      });
      expect(taken.instances.map((i) => i.id)).toEqual(['s-1']);
    };
    await app.client.start(Stolen, null, { id: 's-1' });
    await app.worker.drain();

    points = await otel.collect();
    const by = (metric: string) => {
      const before = new Map(
        (baseline.get(metric) ?? []).map((p) => [String(p.attributes['workflow.name']), p.value as number]),
      );
      const added = (points.get(metric) ?? []).map(
        (p) =>
          [
            String(p.attributes['workflow.name']),
            (p.value as number) - (before.get(String(p.attributes['workflow.name'])) ?? 0),
          ] as const,
      );
      return Object.fromEntries(added.filter(([, n]) => n !== 0));
    };
    expect(by('workflows.instances.started')).toEqual({
      'tel.waits': 3,
      'tel.flaky': 1,
      'tel.order': 1,
      'tel.kid': 1,
      'tel.stolen': 1,
    });
    expect(by('workflows.instances.completed')).toEqual({ 'tel.waits': 3, 'tel.flaky': 1, 'tel.kid': 1 });
    expect(by('workflows.instances.failed')).toEqual({ 'tel.order': 1 });
    expect(by('workflows.lease.losses')).toEqual({ 'tel.stolen': 1 });
    const stepKey = (p: { attributes: Record<string, unknown> }) =>
      `${String(p.attributes['workflow.step.name'])}/${String(p.attributes['workflow.step.outcome'])}`;
    const stepsBefore = new Map(
      (baseline.get('workflows.step.duration') ?? []).map((p) => [stepKey(p), (p.value as { count: number }).count]),
    );
    const steps = Object.fromEntries(
      (points.get('workflows.step.duration') ?? []).map((p) => [
        stepKey(p),
        (p.value as { count: number }).count - (stepsBefore.get(stepKey(p)) ?? 0),
      ]),
    );
    expect(steps).toMatchObject({
      'try/error': 1,
      'try/ok': 1,
      'reserve/ok': 1,
      'charge/error': 1,
      'double/ok': 1,
      'slow/ok': 1,
    });
  });

  it("reports no signal delivery for a child's end (an engine-internal signal), only for the application's signals", async () => {
    app = await createTestApp([Switches, Kid, Order]);
    await app.client.start(Order, 'o-4', { id: 'o-4' });
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    expect((await app.client.getStatus('o-4')).status).toBe('completed');
    const signals = ((await otel.collect()).get('workflows.signal.delivery_latency') ?? []).map(
      (p) => p.attributes['workflow.signal.name'],
    );
    expect(signals.filter((name) => String(name).startsWith('$'))).toEqual([]);
    expect(named('workflow.execute tel.order').flatMap((s) => s.events.map((e) => e.name))).not.toContain(
      'signal taken',
    );
  });

  it('bounds the step names a workflow reports as metric attributes: names built from ids make no series each', async () => {
    app = await createTestApp([Mailing]);
    await app.client.start(Mailing, 150, { id: 'm-1' });
    await app.worker.drain();
    expect((await app.client.getStatus('m-1')).status).toBe('completed');
    const points = ((await otel.collect()).get('workflows.step.duration') ?? []).filter(
      (p) => p.attributes['workflow.name'] === 'tel.mailing',
    );
    const counts = Object.fromEntries(
      points.map((p) => [String(p.attributes['workflow.step.name']), (p.value as { count: number }).count]),
    );
    expect(Object.keys(counts)).toHaveLength(101);
    expect(counts['email-100']).toBe(1);
    expect(counts['$other']).toBe(50);
  });

  it('with telemetry: false, nothing is observed and no trace context is stored', async () => {
    app = await createTestApp([Switches, Kid, Order, Flaky], { telemetry: false });
    await app_.startActiveSpan('caller', async (span) => {
      await app.client.start(Flaky, null, { id: 'quiet' });
      span.end();
    });
    await app.worker.drain();
    expect((await app.client.getStatus('quiet')).traceContext).toBeNull();
    expect(otel.spans().map((s) => s.name)).toEqual(['caller']);
  });

  it('counts starts and ends without subscribing to WorkflowEvents, so nothing builds events nobody reads', async () => {
    const module = await Test.createTestingModule({
      imports: [
        WorkflowsModule.forRoot({
          clock: new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z')),
          worker: false,
          store: new InMemoryWorkflowStore(),
        }),
      ],
      providers: [Kid],
    }).compile();
    await module.init();
    try {
      const baseline =
        (await otel.collect())
          .get('workflows.instances.completed')
          ?.find((p) => p.attributes['workflow.name'] === 'tel.kid')?.value ?? 0;
      await module.get(WorkflowClient).start(Kid, 1, { id: 'unheard' });
      await module.get(WorkflowWorker).drain();
      expect(module.get(WorkflowEvents).observed).toBe(false);
      const completed = (await otel.collect())
        .get('workflows.instances.completed')
        ?.find((p) => p.attributes['workflow.name'] === 'tel.kid')?.value;
      expect(completed).toBe((baseline as number) + 1);
    } finally {
      await module.close();
    }
  });
});
