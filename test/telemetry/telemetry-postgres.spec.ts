// The trace context on PostgreSQL: an instance started in one application (inside its request's
// span) and run by another application's worker on the same tables joins the caller's trace through
// the `trace_context` column (migration 0004), in every execution: after a sleep, and in a child's.
import { trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { installOpenTelemetry } from './otel-setup.js';

const otel = installOpenTelemetry();
const available = await requirePostgres('telemetry on PostgreSQL');

@Workflow('tel.pg.pack')
class Pack implements WorkflowDefinition<string, string> {
  async run(ctx: WorkflowContext, order: string) {
    return ctx.step('box', () => `boxed ${order}`);
  }
}

@Workflow('tel.pg.order')
class Order implements WorkflowDefinition<string, string> {
  async run(ctx: WorkflowContext, order: string) {
    await ctx.step('reserve', () => order);
    await ctx.sleep('nap', '1m');
    const boxed = await ctx.executeChild('pack', Pack, order);
    return ctx.step('ship', () => `shipped ${boxed}`);
  }
}

describe.skipIf(!available)('telemetry on PostgreSQL', () => {
  const fixture = usePostgresStore('tel', { beforeAll, afterAll });
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("every execution in another application, after a sleep and in a child, joins the start() caller's trace", async () => {
    const store = () => new PostgresWorkflowStore({ executor: fromPg(fixture.pool), schema: fixture.schema });
    const starter = await createTestApp([Order, Pack], { store: store() });
    const runner = await createTestApp([Order, Pack], { store: store() });
    apps.push(starter, runner);
    const traceId = await trace.getTracer('the-app').startActiveSpan('http POST /orders', async (span) => {
      await starter.client.start(Order, 'o-1', { id: 'o-1' });
      span.end();
      return span.spanContext().traceId;
    });
    await runner.worker.drain(); // reserve, then the nap
    runner.clock.advance('1m');
    await runner.worker.drain(); // the child starts, runs, ends; the parent ships
    expect(await starter.client.getStatus('o-1')).toMatchObject({ status: 'completed', output: 'shipped boxed o-1' });

    const spans = otel.spans();
    const start = spans.find((s) => s.name === 'workflow.start tel.pg.order')!;
    const executions = spans.filter((s) => s.name === 'workflow.execute tel.pg.order');
    expect(executions.length).toBeGreaterThanOrEqual(3);
    for (const execution of executions) {
      expect(execution.spanContext().traceId).toBe(traceId);
      expect(execution.parentSpanContext?.spanId).toBe(start.spanContext().spanId);
    }
    const childSpan = spans.find((s) => s.name === 'workflow.child pack')!;
    const packStart = spans.find((s) => s.name === 'workflow.start tel.pg.pack')!;
    expect(packStart.parentSpanContext?.spanId).toBe(childSpan.spanContext().spanId);
    const packRun = spans.find((s) => s.name === 'workflow.execute tel.pg.pack')!;
    expect(packRun.spanContext().traceId).toBe(traceId);
    expect(packRun.parentSpanContext?.spanId).toBe(packStart.spanContext().spanId);
  });
});
