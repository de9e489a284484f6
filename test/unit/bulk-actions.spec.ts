import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const go = new WorkflowSignal<null>('bulk.go');
const failing = new Set<string>();

@Workflow('bulk.waiter', { retry: false })
class Waiter {
  async run(ctx: WorkflowContext, input: { n: number }): Promise<number> {
    await ctx.step('check', () => {
      if (failing.has(ctx.id)) throw new Error(`check of ${ctx.id} failed`);
      return input.n;
    });
    await ctx.waitForSignal('go', go);
    return input.n;
  }
}

@Workflow('bulk.other')
class Other {
  async run(ctx: WorkflowContext): Promise<string> {
    await ctx.waitForSignal('go', go);
    return 'other';
  }
}

let app: EngineApp;
afterEach(async () => {
  failing.clear();
  await app?.close();
});

async function startMany(count: number, prefix = 'w'): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++) ids.push((await app.client.start(Waiter, { n }, { id: `${prefix}-${n}` })).id);
  return ids;
}

describe('bulk actions', () => {
  it('cancel every instance the filter matches, each once, across pages, and change nothing on a second run', async () => {
    app = await createEngineApp({ workflows: [new Waiter(), new Other()] });
    await startMany(2500);
    await app.client.start(Other, null, { id: 'other' });
    await app.worker.drain();

    const first = await app.client.cancelMany({ workflow: 'bulk.waiter' }, { reason: 'clean-up' });
    expect(first).toEqual({ matched: 2500, changed: 2500 });
    const again = await app.client.cancelMany({ workflow: 'bulk.waiter' }, { reason: 'clean-up' });
    expect(again).toEqual({ matched: 2500, changed: 0 });

    await app.worker.drain();
    const cancelled = await app.client.list({ status: 'cancelled', limit: 1000 });
    expect(cancelled).toHaveLength(1000);
    expect((await app.client.getStatus('w-1234')).error).toMatchObject({
      message: expect.stringContaining('clean-up'),
    });
    expect((await app.client.getStatus('other')).status).toBe('suspended');
  });

  it('refuse a filter that matches everything unless { all: true }, with nothing changed', async () => {
    app = await createEngineApp({ workflows: [new Waiter()] });
    await startMany(3);
    await app.worker.drain();
    await expect(app.client.terminateMany({})).rejects.toThrow(/matches every instance.*\{ all: true \}/);
    await expect(
      app.client.terminateMany({
        status: [
          'pending',
          'running',
          'suspended',
          'compensating',
          'paused',
          'completed',
          'failed',
          'cancelled',
          'compensation_failed',
        ],
      }),
    ).rejects.toThrow(/all: true/);
    await expect(app.client.cancelMany({ createdBefore: Date.now() + 86_400_000 * 3650 })).rejects.toThrow(/all: true/);
    await expect(app.client.cancelMany({ status: 'bogus' as never })).rejects.toThrow(/Invalid .*"status"/);
    await expect(app.client.cancelMany({ ids: [''] })).rejects.toThrow(/"ids"/);
    expect((await app.client.list({ status: 'suspended' })).length).toBe(3);

    expect(await app.client.terminateMany({ all: true }, { reason: 'shutdown' })).toEqual({ matched: 3, changed: 3 });
    await app.worker.drain();
    expect((await app.client.list({ status: 'cancelled' })).map((i) => i.error?.name)).toEqual([
      'WorkflowTerminatedError',
      'WorkflowTerminatedError',
      'WorkflowTerminatedError',
    ]);
  });

  it('keep to ids and to created bounds', async () => {
    app = await createEngineApp({ workflows: [new Waiter()] });
    await startMany(2, 'early');
    const middle = app.clock.now();
    app.clock.advance('1m');
    await startMany(2, 'late');
    await app.worker.drain();

    expect(await app.client.cancelMany({ ids: ['early-0', 'late-1', 'nobody', 'late-1'] })).toEqual({
      matched: 2,
      changed: 2,
    });
    expect(await app.client.cancelMany({ ids: ['early-1', 'late-0'], createdAfter: middle })).toEqual({
      matched: 1,
      changed: 1,
    });
    expect(await app.client.cancelMany({ createdBefore: middle + 1 })).toEqual({ matched: 2, changed: 1 });
    await app.worker.drain();
    expect((await app.client.list({ status: 'cancelled' })).map((i) => i.id).sort()).toEqual([
      'early-0',
      'early-1',
      'late-0',
      'late-1',
    ]);
  });

  it('retry the failed instances the filter matches, and only those still failed on a second run', async () => {
    app = await createEngineApp({ workflows: [new Waiter()] });
    const ids = await startMany(6);
    for (const id of ids.slice(0, 4)) failing.add(id);
    await app.worker.drain();
    expect((await app.client.list({ status: 'failed' })).length).toBe(4);

    failing.delete('w-0');
    failing.delete('w-1');
    expect(await app.client.retryMany({ status: 'failed' })).toEqual({ matched: 4, changed: 4 });
    await app.worker.drain();
    expect((await app.client.list({ status: 'failed' })).map((i) => i.id)).toEqual(['w-2', 'w-3']);
    expect(await app.client.retryMany({ workflow: 'bulk.waiter' })).toEqual({ matched: 6, changed: 2 });
    expect((await app.client.getStatus('w-0')).status).toBe('suspended');
  });

  it('pause the unfinished instances the filter matches, once each, and resume them', async () => {
    app = await createEngineApp({ workflows: [new Waiter(), new Other()] });
    await startMany(3);
    await app.client.start(Other, null, { id: 'other' });
    await app.worker.drain();
    failing.add('late-0');
    await app.client.start(Waiter, { n: 9 }, { id: 'late-0' });
    await app.worker.drain();

    expect(await app.client.pauseMany({ idPrefix: 'w-' }, { reason: 'incident' })).toEqual({ matched: 3, changed: 3 });
    expect(await app.client.pauseMany({ workflow: 'bulk.waiter' })).toEqual({ matched: 4, changed: 0 });
    expect((await app.client.getStatus('w-1')).status).toBe('paused');
    // Paused, a signal's wake-up waits: nothing runs until the resume.
    await app.client.signal(go, null);
    await app.worker.drain();
    expect((await app.client.list({ idPrefix: 'w-' })).map((i) => i.status)).toEqual(['paused', 'paused', 'paused']);
    expect((await app.client.getStatus('other')).status).toBe('completed');

    expect(await app.client.resumeMany({ workflow: 'bulk.waiter' })).toEqual({ matched: 4, changed: 3 });
    expect(await app.client.resumeMany({ workflow: 'bulk.waiter' })).toEqual({ matched: 4, changed: 0 });
    await app.worker.drain();
    expect((await app.client.list({ idPrefix: 'w-' })).map((i) => i.status)).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    await expect(app.client.resumeMany({})).rejects.toThrow(/all: true/);
  });
});
