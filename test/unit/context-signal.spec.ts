import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// `ctx.signal` and a step's `run.signal` are own, enumerable properties read when asked (the
// execution's AbortSignal is made only if something reads one): what a spread, `Object.keys()` and
// destructuring see of them.

let app: EngineApp;
afterEach(async () => app?.close());

describe('the signal on ctx and on a step run', () => {
  const seen: Record<string, unknown> = {};

  @Workflow('context-signal.shapes')
  class Shapes {
    async run(ctx: WorkflowContext) {
      seen.ctxKeys = Object.keys(ctx);
      seen.ctxSignal = Object.getOwnPropertyDescriptor(ctx, 'signal');
      const { step, signal } = ctx;
      seen.destructured = signal;
      await step('look', (run) => {
        seen.runKeys = Object.keys(run);
        seen.runSpread = { ...run };
        seen.runSignal = run.signal;
        seen.json = JSON.stringify(run, (key, value: unknown) => (key === 'signal' ? 'a signal' : value));
        return null;
      });
      return null;
    }
  }

  it('are own enumerable getters that a spread, Object.keys() and destructuring see', async () => {
    app = await createEngineApp({ workflows: [Shapes] });
    await app.client.start(Shapes, null);
    await app.worker.drain();
    expect(seen.ctxKeys).toEqual([
      'id',
      'workflow',
      'version',
      'signal',
      'step',
      'transaction',
      'sleep',
      'sleepUntil',
      'waitForSignal',
      'startChild',
      'executeChild',
      'now',
      'random',
      'uuid',
      'setStatus',
      'patched',
      'deprecatePatch',
      'stream',
      'createCallback',
      'waitForCallback',
    ]);
    expect(seen.ctxSignal).toMatchObject({ enumerable: true, configurable: true, set: undefined });
    expect(typeof (seen.ctxSignal as PropertyDescriptor).get).toBe('function');
    expect(seen.destructured).toBeInstanceOf(AbortSignal);
    expect(seen.runKeys).toEqual(['attempt', 'signal', 'stream']);
    // One execution, one signal: the step's run sees the one ctx.signal is.
    expect(seen.runSpread).toEqual({ attempt: 1, signal: seen.destructured, stream: expect.any(Function) });
    expect(seen.runSignal).toBe(seen.destructured);
    expect(seen.json).toBe('{"attempt":1,"signal":"a signal"}');
  });
});
