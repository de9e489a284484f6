import { afterEach, describe, expect, it, vi } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

class Code {
  renamed = false;
}

@Workflow('startup-check.flow')
class Flow {
  constructor(private readonly code: Code) {}
  async run(ctx: WorkflowContext) {
    await ctx.step(this.code.renamed ? 'charge-card' : 'charge', () => 1);
    await ctx.sleep('wait', '1h');
  }
}

let app: EngineApp | undefined;
afterEach(async () => app?.close());

/** Two suspended instances, left in `store` by an application of the code before the change. */
async function storeWithOldInstances(): Promise<InMemoryWorkflowStore> {
  const store = new InMemoryWorkflowStore();
  const old = await createEngineApp({ store, workflows: [new Flow(new Code())] });
  await old.client.start(Flow, null, { id: 'a' });
  await old.client.start(Flow, null, { id: 'b' });
  await old.worker.drain();
  await old.close();
  return store;
}

describe('worker.replayCheck', () => {
  it('warns at startup for each sampled instance that would diverge, naming the entry and the reason', async () => {
    const store = await storeWithOldInstances();
    const code = new Code();
    code.renamed = true;
    app = await createEngineApp({
      store,
      workflows: [new Flow(code)],
      worker: { enabled: false, replayCheck: { sample: 1 } },
    });
    await vi.waitFor(() => expect(app!.logged('warn').length).toBe(2));
    expect(app.logged('warn')).toEqual([
      expect.stringMatching(
        /^Instance "a" of startup-check.flow@1 would diverge on this code \(replaced at "charge"\): The code reaches step "charge-card"/,
      ),
      '1 of 1 unfinished instances sampled would diverge on this code: see docs/deploying-changes.md.',
    ]);
    expect((await app.client.getStatus('a', { journal: true })).journal!.map((entry) => entry.name)).toEqual([
      'charge',
      'wait',
    ]);
  });

  it('says nothing for code that matches, and nothing at all when off (the default)', async () => {
    const store = await storeWithOldInstances();
    app = await createEngineApp({
      store,
      workflows: [new Flow(new Code())],
      worker: { enabled: false, replayCheck: true },
    });
    const renamed = new Code();
    renamed.renamed = true;
    const off = await createEngineApp({ store, workflows: [new Flow(renamed)] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(app.logged('warn')).toEqual([]);
    expect(off.logged('warn')).toEqual([]);
    await off.close();
  });

  it('refuses a sample that is no whole number', async () => {
    await expect(createEngineApp({ worker: { replayCheck: { sample: 0 } } })).rejects.toThrow(
      /Invalid WorkflowsModule option "worker.replayCheck".*\{ sample: n \}/,
    );
  });
});
