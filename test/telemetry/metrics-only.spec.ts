// Telemetry with a meter provider and nothing else registered (no tracer provider, no context
// manager; vitest runs each file in its own process): no span records and no context reaches the
// step's code, so steps run without spans of their own, and their durations are still measured.
import { metrics, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

const seen: unknown[] = [];

@Workflow('meter.flaky')
class Flaky implements WorkflowDefinition<null, string> {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'try',
      ({ attempt }) => {
        seen.push(trace.getActiveSpan());
        if (attempt < 2) throw new Error(`attempt ${attempt} failed`);
        return 'ok';
      },
      { retry: { attempts: 3, backoff: '1s' } },
    );
  }
}

let app: TestApp | undefined;
afterEach(async () => app?.close());

describe('telemetry with only a meter provider', () => {
  it('measures each step attempt and counts the instance, with no span around the step', async () => {
    app = await createTestApp([Flaky]);
    await app.client.start(Flaky, null, { id: 'm-1' });
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    expect((await app.client.getStatus('m-1')).status).toBe('completed');
    expect(seen).toEqual([undefined, undefined]);

    exporter.reset();
    await reader.forceFlush();
    const points = new Map(
      exporter
        .getMetrics()
        .flatMap((r) =>
          r.scopeMetrics.flatMap((s) => s.metrics.map((m) => [m.descriptor.name, m.dataPoints] as const)),
        ),
    );
    const steps = Object.fromEntries(
      (points.get('workflows.step.duration') ?? []).map((p) => [
        `${String(p.attributes['workflow.step.name'])}/${String(p.attributes['workflow.step.outcome'])}`,
        (p.value as Histogram).count,
      ]),
    );
    expect(steps).toEqual({ 'try/error': 1, 'try/ok': 1 });
    expect(
      (points.get('workflows.instances.completed') ?? []).map((p) => [p.attributes['workflow.name'], p.value]),
    ).toEqual([['meter.flaky', 1]]);
  });
});
