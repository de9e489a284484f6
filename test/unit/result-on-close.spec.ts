// handle.result() still waiting when the application closes rejects at once with a clear error, instead
// of polling on and keeping the process (and a test runner) alive.
import { describe, expect, it } from 'vitest';
import { Workflow, WorkflowClientClosedError, type WorkflowContext } from '../../src/index.js';
import { createEngineApp } from './support/engine-app.js';

@Workflow('close.sleeper')
class Sleeper {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('long', '1d');
    return 'woke';
  }
}

describe('handle.result() and closing', () => {
  it('rejects a result() still waiting when the application closes, and one asked for after', async () => {
    const app = await createEngineApp({ workflows: [Sleeper], worker: { enabled: false, pollInterval: '1h' } });
    const handle = await app.client.start(Sleeper, null, { id: 'sleepy' });
    await app.worker.drain();
    const waiting = handle.result();
    const settled = waiting.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    // Long enough for result() to read the instance (its status is in the message) and wait for the next poll.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await app.close();
    // With a poll interval of an hour, only the close can have settled it.
    const error = await settled;
    expect(error).toBeInstanceOf(WorkflowClientClosedError);
    expect((error as Error).message).toBe(
      'handle.result() for instance "sleepy" stopped waiting: the application is closing (the instance is suspended ' +
        'and carries on wherever a worker runs it). Read it later with getStatus().',
    );
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowClientClosedError);
  });

  it('still resolves a finished instance and times out as before', async () => {
    const app = await createEngineApp({ workflows: [Sleeper] });
    try {
      const handle = await app.client.start(Sleeper, null);
      await app.worker.drain();
      await expect(handle.result({ timeout: 20 })).rejects.toThrow(/did not end within 20 ms \(it is suspended\)/);
      app.clock.advance('1d');
      await app.worker.drain();
      await expect(handle.result()).resolves.toBe('woke');
    } finally {
      await app.close();
    }
  });

  it('lets any number of result() calls wait at once without a listener-leak warning', async () => {
    const app = await createEngineApp({ workflows: [Sleeper], worker: { enabled: false, pollInterval: '1h' } });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const handle = await app.client.start(Sleeper, null, { id: 'many' });
      await app.worker.drain();
      const waiting = Array.from({ length: 25 }, () => handle.result().catch((error: unknown) => error));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await app.close();
      for (const error of await Promise.all(waiting)) expect(error).toBeInstanceOf(WorkflowClientClosedError);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
