// Without @opentelemetry/api installed (an optional peer), telemetry is a no-op: loading it yields
// nothing and workflows run as usual, storing no trace context.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { loadOpenTelemetry } from '../../src/telemetry/load-open-telemetry.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';

vi.mock('@opentelemetry/api', () => {
  throw new Error("Cannot find package '@opentelemetry/api'");
});

@Workflow('quiet.one')
class One implements WorkflowDefinition<number, number> {
  async run(ctx: WorkflowContext, n: number) {
    return ctx.step('inc', () => n + 1);
  }
}

let app: TestApp | undefined;
afterEach(async () => app?.close());

describe('telemetry without @opentelemetry/api', () => {
  it('loads nothing, and instances run and complete with no trace context', async () => {
    expect(await loadOpenTelemetry()).toBeNull();
    app = await createTestApp([One]);
    await app.client.start(One, 1, { id: 'q' });
    await app.worker.drain();
    const status = await app.client.getStatus('q');
    expect(status).toMatchObject({ status: 'completed', output: 2, traceContext: null });
  });
});
