import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('versions', () => {
  it('runs each instance on the version it started on, and a worker claims only the versions it has', async () => {
    const ran: string[] = [];
    @Workflow('versioned.flow', { version: 1 })
    class V1 {
      async run(ctx: WorkflowContext) {
        await ctx.sleep('s', '1m');
        ran.push('v1');
        return 1;
      }
    }
    @Workflow('versioned.flow', { version: 2 })
    class V2 {
      async run() {
        ran.push('v2');
        return 2;
      }
    }
    const store = new InMemoryWorkflowStore();
    app = await createEngineApp({ workflows: [V1], store });
    const old = await app.client.start('versioned.flow', null);
    await app.worker.drain();
    const clockAt = app.clock.now();
    await app.close();
    // A new deploy has both versions: new instances start on v2, the old one finishes on v1.
    app = await createEngineApp({ workflows: [V1, V2], store });
    app.clock.set(clockAt);
    const fresh = await app.client.start('versioned.flow', null);
    expect((await fresh.status()).version).toBe(2);
    app.clock.advance('1m');
    await app.worker.drain();
    expect([await old.result(), await fresh.result()]).toEqual([1, 2]);
    await app.close();
    // A process that only has v2 never claims a v1 instance.
    app = await createEngineApp({ workflows: [V2], store });
    app.clock.set(clockAt);
    await store.create({
      id: 'legacy',
      workflow: 'versioned.flow',
      version: 1,
      input: null,
      deadline: null,
      now: clockAt,
    });
    expect(await app.worker.drain()).toBe(0);
    expect(ran.sort()).toEqual(['v1', 'v2']);
  });
});
