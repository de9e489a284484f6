import { afterEach, describe, expect, it, vi } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { attemptWithin } from '../../src/engine/attempt-timeout.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// An attempt's timeout is a timer, and Node runs a timer longer than 2^31 - 1 ms (about 24.8 days)
// after 1 ms: a `timeout: '30d'` must still wait 30 days.

const DAY = 86_400_000;

describe('attemptWithin', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('times out after a timeout longer than a timer can hold, and not before', async () => {
    vi.useFakeTimers();
    const parent = new AbortController();
    let signal!: AbortSignal;
    const attempt = attemptWithin(
      parent.signal,
      30 * DAY,
      () => new Error('too slow'),
      (own) => {
        signal = own;
        return new Promise<never>(() => undefined);
      },
    );
    let failed: unknown;
    attempt.catch((error: unknown) => (failed = error));
    await vi.advanceTimersByTimeAsync(30 * DAY - 1);
    expect(failed).toBeUndefined();
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(failed).toMatchObject({ message: 'too slow' });
    expect(signal.reason).toBe(failed);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("aborts the attempt's signal with the parent's reason, even when the parent aborted first", async () => {
    const parent = new AbortController();
    parent.abort(new Error('stop'));
    let reason: unknown;
    await attemptWithin(
      parent.signal,
      1_000,
      () => new Error('too slow'),
      (own) => (reason = own.reason),
    );
    expect(reason).toMatchObject({ message: 'stop' });
  });
});

describe("a step's timeout", () => {
  let app: EngineApp | undefined;
  afterEach(async () => app?.close());

  it('of 30 days lets an attempt of a few milliseconds complete', async () => {
    @Workflow('attempt-timeout.long', { retry: false })
    class Long {
      async run(ctx: WorkflowContext) {
        return ctx.step('slow', () => new Promise((resolve) => setTimeout(() => resolve('done'), 20)), {
          timeout: '30d',
        });
      }
    }
    app = await createEngineApp({ workflows: [Long] });
    const handle = await app.client.start(Long, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.error).toBeNull();
    expect(status.output).toBe('done');
  });
});
