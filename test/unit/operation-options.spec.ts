// The options of ctx.step(), ctx.transaction(), ctx.waitForSignal() and ctx.startChild() are checked
// like the module's and start()'s: a misspelt key fails the call, naming the key and the keys that
// are known, before anything runs, instead of being ignored while its default applies (a
// `{ retries: 5 }` that would have left the step at the default 3 attempts).
import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const ran: string[] = [];

@Workflow('options.child')
class Child {
  async run() {
    ran.push('child');
  }
}

type Call = 'step' | 'step-null' | 'wait' | 'child' | 'execute-child' | 'good';

@Workflow('options.caller', { retry: false })
class Caller {
  async run(ctx: WorkflowContext, call: Call) {
    const body = () => void ran.push(call);
    if (call === 'step') await ctx.step('charge', body, { retries: 5 } as never);
    if (call === 'step-null') await ctx.step('charge', body, null as never);
    if (call === 'wait') await ctx.waitForSignal('approval', 'approve', { timout: '1h' } as never);
    if (call === 'child') await ctx.startChild('sub', Child, null, { parent_close: 'abandon' } as never);
    if (call === 'execute-child') await ctx.executeChild('sub', Child, null, { versoin: 1 } as never);
    if (call === 'good') {
      await ctx.step('charge', body, {
        retry: 2,
        timeout: '1m',
        compensate: () => undefined,
        compensateRetry: 1,
        compensateTimeout: '30s',
      });
      await ctx.executeChild('sub', Child, null, {
        id: 'good-child',
        version: 1,
        parentClose: 'cancel',
        concurrencyKey: 'k',
        rateLimitKey: 'r',
        priority: 1,
        timeout: '1h',
      });
      await ctx.waitForSignal('approval', 'approve', { key: 'k', timeout: '1s' }).catch(() => undefined);
    }
  }
}

describe('operation options', () => {
  let app: EngineApp;
  afterEach(async () => {
    ran.length = 0;
    await app?.close();
  });

  for (const [call, message] of [
    [
      'step',
      'options of step "charge": unknown key "retries". Known keys: retry, timeout, compensate, compensateRetry, compensateTimeout. Check its spelling.',
    ],
    ['step-null', 'options of step "charge" must be an object (or left out), got null.'],
    ['wait', 'options of wait "approval": unknown key "timout". Known keys: key, timeout. Check its spelling.'],
    [
      'child',
      'options of child "sub": unknown key "parent_close". Known keys: id, version, parentClose, concurrencyKey, rateLimitKey, priority, timeout. Check its spelling.',
    ],
    ['execute-child', 'options of child "sub": unknown key "versoin".'],
  ] as const) {
    it(`fails the instance on a misspelt key in the options of ${call}, running nothing`, async () => {
      app = await createEngineApp({ workflows: [Caller, Child] });
      const handle = await app.client.start(Caller, call, { id: `caller-${call}` });
      await app.worker.drain();
      const status = await handle.status({ journal: true });
      expect(status.status).toBe('failed');
      expect(status.error?.name).toBe('TypeError');
      expect(status.error?.message).toContain(message);
      expect(ran).toEqual([]);
      expect(status.journal).toEqual([]);
      expect(await app.store.get(`caller-${call}/sub`)).toBeNull(); // no child was created
    });
  }

  it('takes every documented key', async () => {
    app = await createEngineApp({ workflows: [Caller, Child] });
    const handle = await app.client.start(Caller, 'good', { id: 'caller-good' });
    await app.worker.drain();
    app.clock.advance(2_000);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('completed');
    expect(ran).toEqual(['good', 'child']);
  });
});
