// The trace context on MariaDB: an instance started in one application (as an HTTP handler would,
// inside its request's span) and run by another application's worker on the same tables joins the
// caller's trace, through the `trace_context` column (MySQL migration 0002).
import { trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { installOpenTelemetry } from './otel-setup.js';

const otel = installOpenTelemetry();
const available = await requireMysql('telemetry on MariaDB');

@Workflow('tel.mysql.order')
class Order implements WorkflowDefinition<string, string> {
  async run(ctx: WorkflowContext, order: string) {
    return ctx.step('ship', () => `shipped ${order}`);
  }
}

describe.skipIf(!available)('telemetry on MariaDB', () => {
  const fixture = useMysqlStore('tel', { beforeAll, afterAll });
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("an execution in another application joins the start() caller's trace, read back from the instance row", async () => {
    const store = () => new MySqlWorkflowStore({ executor: fromMysql2(fixture.pool), schema: fixture.schema });
    const starter = await createTestApp([Order], { store: store() });
    const runner = await createTestApp([Order], { store: store() });
    apps.push(starter, runner);
    const traceId = await trace.getTracer('the-app').startActiveSpan('http POST /orders', async (span) => {
      await starter.client.start(Order, 'o-1', { id: 'o-1' });
      span.end();
      return span.spanContext().traceId;
    });
    expect((await runner.client.getStatus('o-1')).traceContext?.traceparent).toMatch(
      new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
    );
    expect(await runner.worker.drain()).toBe(1);
    expect(await starter.client.getStatus('o-1')).toMatchObject({ status: 'completed', output: 'shipped o-1' });
    const start = otel.spans().find((s) => s.name === 'workflow.start tel.mysql.order')!;
    const execution = otel.spans().find((s) => s.name === 'workflow.execute tel.mysql.order')!;
    expect(execution.spanContext().traceId).toBe(traceId);
    expect(execution.parentSpanContext?.spanId).toBe(start.spanContext().spanId);
  });
});
