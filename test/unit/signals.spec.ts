import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, WorkflowSignal, WorkflowSignalTimeoutError, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const approved = new WorkflowSignal<{ by: string }>('order.approved');
const vote = new WorkflowSignal<{ by: string }>('signals.vote');
const go = new WorkflowSignal<null>('signals.go');

@Workflow('signals.one')
class WaitOne {
  async run(ctx: WorkflowContext, input: { key?: string; sleepFirst?: boolean }) {
    if (input.sleepFirst) await ctx.sleep('first', '1h');
    return ctx.waitForSignal('approval', approved, { key: input.key });
  }
}

@Workflow('signals.two')
class WaitTwo {
  async run(ctx: WorkflowContext) {
    const first = await ctx.waitForSignal('first', approved, { key: 'k' });
    const second = await ctx.waitForSignal('second', approved, { key: 'k' });
    return [first.by, second.by];
  }
}

@Workflow('signals.timeout')
class WaitWithTimeout {
  async run(ctx: WorkflowContext) {
    try {
      return await ctx.waitForSignal('approval', approved, { timeout: '1h' });
    } catch (error) {
      return { timedOut: error instanceof WorkflowSignalTimeoutError, name: (error as Error).name };
    }
  }
}

@Workflow('signals.race')
class WaitOrSleep {
  async run(ctx: WorkflowContext) {
    return Promise.race([
      ctx.waitForSignal('approval', approved).then((p) => p.by),
      ctx.sleep('deadline', '1d').then(() => 'slept'),
    ]);
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

async function setup() {
  app = await createEngineApp({ workflows: [WaitOne, WaitTwo, WaitWithTimeout, WaitOrSleep] });
  return app;
}

describe('signals', () => {
  it('wakes a suspended wait and resolves it with the payload', async () => {
    await setup();
    const handle = await app.client.start(WaitOne, {});
    await app.worker.drain();
    const waiting = await handle.status();
    expect(waiting.status).toBe('suspended');
    expect(waiting.waits).toEqual([{ name: 'order.approved', key: null }]);
    expect(waiting.wakeAt).toBeNull();
    expect(await app.client.signal(approved, { by: 'ann' })).toMatchObject({ woken: 1, created: true });
    expect(await app.worker.drain()).toBe(1);
    expect(await handle.result()).toEqual({ by: 'ann' });
  });

  it('takes a signal sent before the wait is reached, also when a sleep lies between', async () => {
    await setup();
    const handle = await app.client.start(WaitOne, { sleepFirst: true });
    await app.worker.drain();
    expect(await app.client.signal(approved, { by: 'early' })).toMatchObject({ woken: 0, created: true });
    app.clock.advance('1h');
    await app.worker.drain();
    expect(await handle.result()).toEqual({ by: 'early' });
  });

  it('does not take a signal sent before the instance started', async () => {
    await setup();
    await app.client.signal(approved, { by: 'too-early' });
    const handle = await app.client.start(WaitOne, {});
    await app.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    await app.client.signal(approved, { by: 'in-time' });
    await app.worker.drain();
    expect(await handle.result()).toEqual({ by: 'in-time' });
  });

  it('matches exactly the key: a keyed wait ignores other keys and unkeyed signals', async () => {
    await setup();
    const keyed = await app.client.start(WaitOne, { key: 'order-1' });
    const unkeyed = await app.client.start(WaitOne, {});
    await app.worker.drain();
    expect((await app.client.signal(approved, { by: 'other' }, { key: 'order-2' })).woken).toBe(0);
    expect((await app.client.signal(approved, { by: 'none' })).woken).toBe(1);
    await app.worker.drain();
    expect((await keyed.status()).status).toBe('suspended');
    expect(await unkeyed.result()).toEqual({ by: 'none' });
    expect((await app.client.signal(approved, { by: 'right' }, { key: 'order-1' })).woken).toBe(1);
    await app.worker.drain();
    expect(await keyed.result()).toEqual({ by: 'right' });
  });

  it('gives two waits of one name and key two signals, in order', async () => {
    await setup();
    const handle = await app.client.start(WaitTwo, null);
    await app.worker.drain();
    await app.client.signal(approved, { by: '1st' }, { key: 'k' });
    await app.client.signal(approved, { by: '2nd' }, { key: 'k' });
    await app.worker.drain();
    expect(await handle.result()).toEqual(['1st', '2nd']);
  });

  it('wakes every instance that waits for one signal', async () => {
    await setup();
    const handles = await Promise.all([1, 2, 3].map(() => app.client.start(WaitOne, { key: 'shared' })));
    await app.worker.drain();
    expect((await app.client.signal(approved, { by: 'all' }, { key: 'shared' })).woken).toBe(3);
    expect(await app.worker.drain()).toBe(3);
    for (const handle of handles) expect(await handle.result()).toEqual({ by: 'all' });
  });

  it('stores a signal with an id once, returning the first id with created: false', async () => {
    await setup();
    const handle = await app.client.start(WaitTwo, null);
    await app.worker.drain();
    const first = await app.client.signal(approved, { by: 'once' }, { key: 'k', id: 'evt-1' });
    const again = await app.client.signal(approved, { by: 'once' }, { key: 'k', id: 'evt-1' });
    expect(again).toEqual({ id: first.id, woken: 0, created: false });
    await app.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    await app.client.signal(approved, { by: 'twice' }, { key: 'k', id: 'evt-2' });
    await app.worker.drain();
    expect(await handle.result()).toEqual(['once', 'twice']);
  });

  it('throws WorkflowSignalTimeoutError at the timeout, the same on every replay', async () => {
    await setup();
    const handle = await app.client.start(WaitWithTimeout, null);
    await app.worker.drain();
    expect((await handle.status()).wakeAt).toBe(app.clock.now() + 3_600_000);
    app.clock.advance('1h');
    await app.worker.drain();
    expect(await handle.result()).toEqual({ timedOut: true, name: 'WorkflowSignalTimeoutError' });
    // A signal after the timeout changes nothing.
    expect((await app.client.signal(approved, { by: 'late' })).woken).toBe(0);
  });

  it('races a wait against a sleep', async () => {
    await setup();
    const signalled = await app.client.start(WaitOrSleep, null);
    await app.worker.drain();
    await app.client.signal(approved, { by: 'fast' });
    await app.worker.drain();
    expect(await signalled.result()).toBe('fast');
    const slept = await app.client.start(WaitOrSleep, null);
    await app.worker.drain();
    app.clock.advance('1d');
    await app.worker.drain();
    expect(await slept.result()).toBe('slept');
  });

  it('refuses empty and reserved signal names', async () => {
    expect(() => new WorkflowSignal('')).toThrow(/non-empty/);
    expect(() => new WorkflowSignal('$child-ended')).toThrow(/reserved/);
    await setup();
    await expect(app.client.signal('', {})).rejects.toThrow(/non-empty/);
  });

  it('never loses a wake-up when signals race suspensions', async () => {
    await setup();
    for (let round = 0; round < 50; round++) {
      const handle = await app.client.start(WaitOne, { key: `race-${round}` });
      // The signal is sent while the execution runs: before, between or after its read of signals and its suspension.
      const delay = round % 5;
      const [, sent] = await Promise.all([
        app.worker.drain(),
        (async () => {
          for (let i = 0; i < delay; i++) await new Promise((r) => setImmediate(r));
          return app.client.signal(approved, { by: `r${round}` }, { key: `race-${round}` });
        })(),
      ]);
      expect(sent.created).toBe(true);
      await app.worker.drain();
      expect(await handle.result({ timeout: 1000 })).toEqual({ by: `r${round}` });
    }
  });
});

describe('parallel waits on one signal', () => {
  @Workflow('signals.two-votes')
  class TwoVotes {
    async run(ctx: WorkflowContext) {
      await ctx.waitForSignal('ready', go);
      const [a, b] = await Promise.all([ctx.waitForSignal('a', vote), ctx.waitForSignal('b', vote)]);
      return [a.by, b.by].sort();
    }
  }

  it('takes two signals that were both sent before the waits were reached, in one execution', async () => {
    app = await createEngineApp({ workflows: [TwoVotes] });
    const handle = await app.client.start(TwoVotes, null);
    await app.worker.drain();
    await app.client.signal(vote, { by: 'ann' });
    await app.client.signal(vote, { by: 'bob' });
    await app.client.signal(go, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('completed');
    expect(status.output).toEqual(['ann', 'bob']);
  });
});
