import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowHistory } from '../../src/index.js';
import { replayHistory, replayStored } from '../../src/testing/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

type Code =
  'original' | 'renamed' | 'removed' | 'inserted' | 'swapped' | 'kind' | 'patched' | 'deprecated' | 'appended';

class Code$ {
  code: Code = 'original';
  stepsRun = 0;
}

@Workflow('replay.shop')
class Shop {
  constructor(private readonly shape: Code$) {}

  async run(ctx: WorkflowContext, input: { parallel?: boolean }): Promise<string> {
    const step = (name: string) =>
      ctx.step(name, () => {
        this.shape.stepsRun++;
        return name;
      });
    if (input.parallel) {
      // The first step finishes last: the journal's order is not the call order.
      await Promise.all([
        ctx.step('slow', async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          return 1;
        }),
        ctx.step('fast', () => 2),
      ]);
      await ctx.sleep('after', '1m');
      return 'parallel';
    }
    switch (this.shape.code) {
      case 'original':
      case 'appended':
        await step('reserve');
        await step('charge');
        ctx.now();
        await ctx.sleep('cool-off', '1m');
        if (this.shape.code === 'appended') await step('survey');
        await step('ship');
        return 'shipped';
      case 'renamed':
        await step('reserve');
        await step('charge-card');
        break;
      case 'removed':
        await step('reserve');
        ctx.now();
        await ctx.sleep('cool-off', '1m');
        break;
      case 'inserted':
        await step('reserve');
        await step('check-fraud');
        await step('charge');
        break;
      case 'swapped':
        await step('charge');
        await step('reserve');
        ctx.now();
        await ctx.sleep('cool-off', '1m');
        break;
      case 'kind':
        await step('reserve');
        await ctx.sleep('charge', '1s');
        break;
      case 'patched':
        await step('reserve');
        if (ctx.patched('split-charge')) await step('authorize');
        else await step('charge');
        ctx.now();
        await ctx.sleep('cool-off', '1m');
        break;
      case 'deprecated':
        await step('reserve');
        ctx.deprecatePatch('split-charge');
        await step('authorize');
        break;
    }
    return 'changed';
  }
}

let app: EngineApp;
let shape: Code$;
afterEach(async () => app?.close());

/** An instance of the original code suspended in "cool-off", and its exported history (through JSON, as a fixture file). */
async function suspendedHistory(input: object = {}): Promise<WorkflowHistory> {
  shape = new Code$();
  app = await createEngineApp({ workflows: [new Shop(shape)] });
  const handle = await app.client.start(Shop, input, { id: 'order-1' });
  await app.worker.drain();
  expect((await handle.status()).status).toBe('suspended');
  return JSON.parse(JSON.stringify(await app.client.exportHistory('order-1'))) as WorkflowHistory;
}

describe('client.exportHistory()', () => {
  it('holds the instance, its journal in first-write order, the signals it took and the library version', async () => {
    shape = new Code$();
    @Workflow('replay.signalled')
    class Signalled {
      async run(ctx: WorkflowContext) {
        return ctx.waitForSignal('approval', 'approved', { key: 'k' });
      }
    }
    app = await createEngineApp({ workflows: [Signalled] });
    const handle = await app.client.start(Signalled, { order: 7 });
    await app.worker.drain();
    await app.client.signal('approved', { by: 'ann' }, { key: 'k' });
    await app.worker.drain();
    const history = await app.client.exportHistory(handle.id);
    expect(history).toMatchObject({
      format: 'nest-workflows/history',
      formatVersion: 1,
      libraryVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
      instance: { id: handle.id, workflow: 'replay.signalled', version: 1, status: 'completed', input: { order: 7 } },
      journal: [{ name: 'approval', kind: 'signal', state: 'completed', value: { by: 'ann' } }],
      signals: [{ wait: 'approval', name: 'approved', key: 'k', payload: { by: 'ann' } }],
    });
    expect(history.instance).not.toHaveProperty('leaseToken');
    expect(JSON.parse(JSON.stringify(history))).toEqual(history);
  });

  it('throws WorkflowNotFoundError for an unknown id', async () => {
    shape = new Code$();
    app = await createEngineApp({ workflows: [new Shop(shape)] });
    await expect(app.client.exportHistory('nope')).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
  });
});

describe('replayHistory()', () => {
  it('reports ok for the same code, and runs no step and writes nothing', async () => {
    const history = await suspendedHistory();
    const before = await app.client.getStatus('order-1', { journal: true });
    const ran = shape.stepsRun;
    expect(await replayHistory(app.replayParts, history)).toEqual({
      id: 'order-1',
      workflow: 'replay.shop',
      version: 1,
      result: 'ok',
      end: 'suspended',
    });
    expect(shape.stepsRun).toBe(ran);
    expect(await app.client.getStatus('order-1', { journal: true })).toEqual(before);
  });

  it('reports ok for a step added after where the instance is', async () => {
    const history = await suspendedHistory();
    shape.code = 'appended';
    expect(await replayHistory(app.replayParts, history)).toMatchObject({ result: 'ok' });
  });

  it.each([
    [
      'renamed',
      'replaced',
      'charge',
      'charge-card',
      /reaches step "charge-card", which the journal lacks, where the journal has step "charge"/,
    ],
    [
      'inserted',
      'replaced',
      'charge',
      'check-fraud',
      /reaches step "check-fraud".*where the journal has step "charge"/,
    ],
    ['removed', 'not-reached', 'charge', null, /journal has step "charge", which the code never reaches/],
    [
      'swapped',
      'order-changed',
      'reserve',
      'reserve',
      /reaches step "reserve" after step "charge", but the journal recorded "reserve" first/,
    ],
    ['kind', 'kind-changed', 'charge', 'charge', /recorded "charge" as a step; the code now reaches it as a sleep/],
  ] as const)(
    'reports the %s code as %s at the first entry that differs',
    async (code, reason, entry, reached, message) => {
      const history = await suspendedHistory();
      shape.code = code;
      const ran = shape.stepsRun;
      const report = await replayHistory(app.replayParts, history);
      expect(report).toMatchObject({ id: 'order-1', result: 'diverged', reason, entry, reached });
      expect(report.result === 'diverged' && report.message).toMatch(message);
      expect(shape.stepsRun).toBe(ran);
    },
  );

  it('reports ok for an old instance on code with a patch, and a deprecated patch as diverged', async () => {
    const history = await suspendedHistory();
    shape.code = 'patched';
    expect(await replayHistory(app.replayParts, history)).toMatchObject({ result: 'ok', end: 'suspended' });
    shape.code = 'deprecated';
    expect(await replayHistory(app.replayParts, history)).toMatchObject({
      result: 'diverged',
      reason: 'patch-deprecated',
      reached: '$patch:split-charge',
      message: expect.stringMatching(/went past patch "split-charge"/),
    });
  });

  it('does not take parallel steps that finished out of call order for a change of order', async () => {
    const history = await suspendedHistory({ parallel: true });
    expect(history.journal.map((entry) => entry.name)).toEqual(['fast', 'slow', 'after']);
    expect(await replayHistory(app.replayParts, history)).toMatchObject({ result: 'ok' });
  });

  it('replays a workflow that writes to a stream, writing nothing more to it', async () => {
    @Workflow('replay.streaming')
    class Streaming {
      async run(ctx: WorkflowContext) {
        await ctx.step('one', () => 1);
        await ctx.stream<number>('progress').write(1);
        await ctx.sleep('pause', '1m');
        return 'done';
      }
    }
    app = await createEngineApp({ workflows: [Streaming] });
    const handle = await app.client.start(Streaming, null);
    await app.worker.drain();
    const history = await app.client.exportHistory(handle.id);
    expect(await replayHistory(app.replayParts, history)).toMatchObject({ result: 'ok', end: 'suspended' });
    expect(await app.client.exportHistory(handle.id)).toMatchObject({ journal: history.journal });
  });

  it('replays a workflow waiting for a callback', async () => {
    @Workflow('replay.callback')
    class Approval {
      async run(ctx: WorkflowContext) {
        const { token } = await ctx.createCallback('approval');
        await ctx.step('send-link', () => token.length);
        return ctx.waitForCallback('approval');
      }
    }
    app = await createEngineApp({ workflows: [Approval] });
    const handle = await app.client.start(Approval, null);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    const history = await app.client.exportHistory(handle.id);
    expect(await replayHistory(app.replayParts, history)).toMatchObject({ result: 'ok', end: 'suspended' });
  });

  it('reports an instance of a version the app does not have', async () => {
    const history = await suspendedHistory();
    history.instance.version = 9;
    expect(await replayHistory(app.replayParts, history)).toMatchObject({
      result: 'diverged',
      reason: 'unknown-workflow',
    });
  });

  it('refuses what is no history with WorkflowHistoryError', async () => {
    const history = await suspendedHistory();
    expect(() => replayHistory(app.replayParts, { ...history, format: 'other' })).toThrow(
      expect.objectContaining({ name: 'WorkflowHistoryError', message: expect.stringMatching(/"format" is "other"/) }),
    );
    expect(() => replayHistory(app.replayParts, { ...history, journal: [{ kind: 'step' }] })).toThrow(
      /"journal\[0\]" has no name/,
    );
  });
});

describe('replayStored()', () => {
  it('replays every unfinished instance of the store, or those the filter names, and reports each', async () => {
    await suspendedHistory();
    await app.client.start(Shop, {}, { id: 'order-2' });
    await app.client.start(Shop, {}, { id: 'order-3' });
    await app.worker.drain(); // all three sleep in "cool-off"
    shape.code = 'patched';
    await app.client.start(Shop, {}, { id: 'order-4' }); // pending: nothing journaled yet
    // Paused (as an operator's pause leaves it): a resume meets the new code too.
    expect(await app.replayParts.storage.pause('order-3', { reason: null, now: app.clock.now() })).toBe(true);
    shape.code = 'removed';
    const reports = await replayStored(app.replayParts);
    expect(reports.map((report) => [report.id, report.result])).toEqual([
      ['order-1', 'diverged'],
      ['order-2', 'diverged'],
      ['order-3', 'diverged'],
      ['order-4', 'ok'],
    ]);
    expect(await replayStored(app.replayParts, { status: 'pending' })).toHaveLength(1);
    expect(await replayStored(app.replayParts, { status: 'paused' })).toMatchObject([
      { id: 'order-3', result: 'diverged' },
    ]);
    expect(await replayStored(app.replayParts, { workflow: 'other' })).toEqual([]);
    expect(await replayStored(app.replayParts, { limit: 2 })).toHaveLength(2);
  });
});
