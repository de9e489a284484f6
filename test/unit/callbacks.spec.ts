import { afterEach, describe, expect, it } from 'vitest';
import {
  Workflow,
  WorkflowCallbackTimeoutError,
  WorkflowCallbackTokenError,
  type WorkflowContext,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const tokens = new Map<string, string>();

@Workflow('callbacks.approval')
class Approval {
  async run(ctx: WorkflowContext, input: { timeout?: string }) {
    const { token } = await ctx.createCallback('approval', input.timeout ? { timeout: input.timeout } : {});
    await ctx.step('send-link', () => void tokens.set(ctx.id, token));
    try {
      return { approved: await ctx.waitForCallback<{ by: string }>('approval') };
    } catch (error) {
      return { error: (error as Error).name, message: (error as Error).message };
    }
  }
}

@Workflow('callbacks.early')
class EarlyCompletion {
  async run(ctx: WorkflowContext) {
    const { token } = await ctx.createCallback('cb');
    await ctx.step('hand-out', () => void tokens.set(ctx.id, token));
    await ctx.sleep('later', '1m');
    return ctx.waitForCallback('cb');
  }
}

@Workflow('callbacks.wrong-order')
class WaitBeforeCreate {
  async run(ctx: WorkflowContext) {
    return ctx.waitForCallback('cb').catch((e: Error) => e.message);
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

async function started(input: { timeout?: string } = {}) {
  app = await createEngineApp({ workflows: [Approval] });
  const handle = await app.client.start(Approval, input);
  await app.worker.drain();
  return { handle, token: tokens.get(handle.id)! };
}

describe('callbacks', () => {
  it('makes a token of at least 128 random bits, the same on every replay, and resolves the wait with the payload', async () => {
    const { handle, token } = await started();
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect((await handle.status()).status).toBe('suspended');
    expect(await app.client.completeCallback(token, { by: 'ann' })).toEqual({ id: handle.id, name: 'approval' });
    await app.worker.drain();
    expect(await handle.result()).toEqual({ approved: { by: 'ann' } });
    expect(tokens.get(handle.id)).toBe(token);
  });

  it('refuses a used, unknown or expired token with WorkflowCallbackTokenError, storing nothing', async () => {
    const { handle, token } = await started({ timeout: '1h' });
    await app.client.completeCallback(token, { by: 'ann' });
    const used = await app.client.completeCallback(token, { by: 'bob' }).catch((e: unknown) => e);
    expect(used).toBeInstanceOf(WorkflowCallbackTokenError);
    expect((used as WorkflowCallbackTokenError).reason).toBe('used');
    expect((used as Error).message).toMatch(/usable once/);
    const unknown = await app.client.failCallback('not-a-token', new Error('x')).catch((e: unknown) => e);
    expect((unknown as WorkflowCallbackTokenError).reason).toBe('unknown');
    await app.worker.drain();
    expect(await handle.result()).toEqual({ approved: { by: 'ann' } });

    const second = await app.client.start(Approval, { timeout: '1h' }, { id: 'late' });
    await app.worker.drain();
    app.clock.advance('1h');
    const expired = await app.client.completeCallback(tokens.get(second.id)!, {}).catch((e: unknown) => e);
    expect((expired as WorkflowCallbackTokenError).reason).toBe('expired');
    await expect(app.client.completeCallback('', {})).rejects.toThrow(/non-empty string/);
  });

  it('throws WorkflowCallbackTimeoutError from the wait once the timeout passed, and the token is used up', async () => {
    const { handle, token } = await started({ timeout: '10m' });
    app.clock.advance('10m');
    await app.worker.drain();
    expect(await handle.result()).toMatchObject({ error: WorkflowCallbackTimeoutError.name });
    const late = await app.client.completeCallback(token, {}).catch((e: unknown) => e);
    expect((late as WorkflowCallbackTokenError).reason).toMatch(/used|expired/);
  });

  it('throws the error given to failCallback() from the wait', async () => {
    const { handle, token } = await started();
    await app.client.failCallback(token, new RangeError('declined by the bank'));
    await app.worker.drain();
    expect(await handle.result()).toEqual({ error: 'RangeError', message: 'declined by the bank' });
  });

  it('keeps a completion that came before the wait was reached, and refuses waiting before creating', async () => {
    app = await createEngineApp({ workflows: [EarlyCompletion, WaitBeforeCreate] });
    const early = await app.client.start('callbacks.early', {});
    await app.worker.drain();
    await app.client.completeCallback(tokens.get(early.id)!, 'yes');
    app.clock.advance('1m');
    await app.worker.drain();
    expect(await early.result()).toBe('yes');
    const wrong = await app.client.start('callbacks.wrong-order', {});
    await app.worker.drain();
    expect(await wrong.result()).toMatch(/before ctx.createCallback/);
  });
});
