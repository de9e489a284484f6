// With a codec, error messages, stacks and cancel reasons are encrypted at rest (docs/encryption.md):
// the spans must not export them in clear to the tracing backend. They carry the error's name only.
import { randomBytes } from 'node:crypto';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  NonRetryableError,
  Workflow,
  WorkflowSignal,
  type WorkflowContext,
  type WorkflowDefinition,
} from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { installOpenTelemetry } from './otel-setup.js';

const otel = installOpenTelemetry();
const SECRET = 'card-4242-4242-4242-4242';
const never = new WorkflowSignal<null>('codec.never');

@Workflow('codec.pay')
class Pay implements WorkflowDefinition<null, string> {
  async run(ctx: WorkflowContext) {
    await ctx.step('reserve', () => 'held', {
      compensate: () => {
        throw new NonRetryableError(`release failed for ${SECRET}`);
      },
      compensateRetry: { attempts: 1 },
    });
    return ctx.step('charge', () => {
      throw new NonRetryableError(`declined: ${SECRET}`);
    });
  }
}

@Workflow('codec.waits')
class Waits implements WorkflowDefinition<null, null> {
  async run(ctx: WorkflowContext) {
    await ctx.step('prepare', () => 'ok', { compensate: () => undefined });
    return ctx.waitForSignal('forever', never);
  }
}

let app: TestApp | undefined;
beforeEach(() => otel.resetSpans());
afterEach(async () => app?.close());

/** Every string a span exports: its name, attributes, status message, events and their attributes. */
function exported(span: ReadableSpan): string {
  return JSON.stringify([span.name, span.attributes, span.status, span.events.map((e) => [e.name, e.attributes])]);
}

describe('telemetry with a codec', () => {
  it("exports a failed step's, compensation's and instance's error by name only, never its message or stack", async () => {
    app = await createTestApp([Pay], { codec: new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' }) });
    await app.client.start(Pay, null, { id: 'p-1' });
    await app.worker.drain();
    expect((await app.client.getStatus('p-1')).status).toBe('compensation_failed');

    const spans = otel.spans();
    const charge = spans.find((s) => s.name === 'workflow.step charge')!;
    expect(charge.status).toMatchObject({ code: 2, message: 'NonRetryableError' });
    expect(charge.events.find((e) => e.name === 'exception')?.attributes).toMatchObject({
      'exception.type': 'NonRetryableError',
    });
    expect(spans.find((s) => s.name === 'workflow.compensation reserve')!.status).toMatchObject({
      code: 2,
      message: 'NonRetryableError',
    });
    const execution = spans.find((s) => s.name === 'workflow.execute codec.pay')!;
    expect(execution.status.code).toBe(2);
    for (const span of spans) expect(exported(span), span.name).not.toContain(SECRET);
  });

  it('exports no cancel reason', async () => {
    app = await createTestApp([Waits], { codec: new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' }) });
    await app.client.start(Waits, null, { id: 'w-1' });
    await app.worker.drain();
    await app.client.cancel('w-1', `refund to ${SECRET}`);
    await app.worker.drain();
    expect((await app.client.getStatus('w-1')).status).toBe('cancelled');
    await app.client.start(Waits, null, { id: 'w-2' });
    await app.worker.drain();
    await app.client.terminate('w-2', `refund to ${SECRET}`);
    await app.worker.drain();
    expect((await app.client.getStatus('w-2')).status).toBe('cancelled');

    const ends = otel
      .spans()
      .filter((s) => s.name === 'workflow.execute codec.waits' && s.attributes['workflow.outcome'] === 'cancelled');
    expect(ends).toHaveLength(2);
    for (const span of otel.spans()) expect(exported(span), span.name).not.toContain(SECRET);
  });

  it('without a codec, still exports the message (as documented)', async () => {
    app = await createTestApp([Pay]);
    await app.client.start(Pay, null, { id: 'p-2' });
    await app.worker.drain();
    expect(otel.spans().find((s) => s.name === 'workflow.step charge')!.status).toMatchObject({
      code: 2,
      message: `NonRetryableError: declined: ${SECRET}`,
    });
  });
});
