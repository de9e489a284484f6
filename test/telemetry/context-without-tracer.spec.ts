// Telemetry with a context manager and a propagator but no tracer provider (vitest runs each file in
// its own process): no span records, yet the context still reaches the step's code, carrying the
// start() caller's trace, so what the step calls (an HTTP client's propagation) joins that trace.
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const inStep: Array<string | undefined> = [];

@Workflow('ctx.one')
class One implements WorkflowDefinition<null, number> {
  async run(ctx: WorkflowContext) {
    return ctx.step('look', () => {
      inStep.push(trace.getSpanContext(context.active())?.traceId);
      return 1;
    });
  }
}

let app: TestApp | undefined;
afterEach(async () => app?.close());

describe('telemetry with a context manager but no tracer provider', () => {
  it("runs each step in a context that carries the start() caller's trace", async () => {
    app = await createTestApp([One]);
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const caller = trace.setSpanContext(context.active(), {
      traceId,
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
    });
    await context.with(caller, () => app!.client.start(One, null, { id: 'c-1' }));
    await app.worker.drain();
    expect((await app.client.getStatus('c-1')).status).toBe('completed');
    expect(inStep).toEqual([traceId]);
  });
});
