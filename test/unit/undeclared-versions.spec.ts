import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
const undeclaredWarnings = () => app!.logged('warn').filter((text) => text.includes('does not declare'));

afterEach(async () => {
  await app?.close();
  app = undefined;
});

@Workflow('orphans.flow', { version: 1 })
class FlowV1 {
  async run() {
    return 1;
  }
}

@Workflow('orphans.flow', { version: 2 })
class FlowV2 {
  async run() {
    return 2;
  }
}

@Workflow('orphans.limited', { concurrency: { limit: 1 } })
class Limited {
  async run() {
    return 'limited';
  }
}

// Default worker settings: 30 s leases, so a grace of 90 s; one look a minute at most.
describe('instances of a version no process declares', () => {
  it('are reported once per version, with their count, by an idle worker once they have been due past the grace period', async () => {
    const store = new InMemoryWorkflowStore();
    // A release that declares versions 1 and 2 starts instances on version 2, then is rolled back.
    app = await createEngineApp({ workflows: [FlowV1, FlowV2], store });
    const t0 = app.clock.now();
    await app.client.start('orphans.flow', 'a');
    await app.client.start('orphans.flow', 'b');
    expect((await app.client.list({ workflow: 'orphans.flow' })).map((instance) => instance.version)).toEqual([2, 2]);
    await app.close();

    app = await createEngineApp({ workflows: [FlowV1, Limited], store });
    app.clock.set(t0);
    // A declared version due as long, but held back by its concurrency limit (another worker's live lease): never reported.
    await store.create({
      id: 'limited-held',
      workflow: 'orphans.limited',
      version: 1,
      input: null,
      deadline: null,
      now: t0,
    });
    const held = await store.claim({
      owner: 'elsewhere',
      token: 'x',
      now: t0,
      leaseUntil: t0 + 86_400_000,
      limit: 1,
      workflows: [{ name: 'orphans.limited', version: 1 }],
    });
    expect(held.instances.map((instance) => instance.id)).toEqual(['limited-held']);
    await store.create({
      id: 'limited-waits',
      workflow: 'orphans.limited',
      version: 1,
      input: null,
      deadline: null,
      now: t0,
    });

    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('89s');
    expect(await app.worker.drain()).toBe(0);
    expect(undeclaredWarnings()).toEqual([]); // due for 89 s: within the grace period

    app.clock.advance('61s');
    expect(await app.worker.drain()).toBe(0);
    expect(undeclaredWarnings()).toHaveLength(1);
    const [warning] = undeclaredWarnings();
    expect(warning).toContain('2 instances of workflow "orphans.flow" version 2 have been due for over 90 s');
    expect(warning).toContain(
      "client.list({ workflow: \"orphans.flow\", version: 2, status: ['pending', 'running', 'suspended', 'compensating'] })",
    );
    expect(warning).not.toContain('orphans.limited');

    // Not again at every idle poll, nor every minute while they are still there.
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('61s');
    expect(await app.worker.drain()).toBe(0);
    expect(undeclaredWarnings()).toHaveLength(1);
  });

  it('are not reported by a worker that declares their version (it runs them)', async () => {
    const store = new InMemoryWorkflowStore();
    app = await createEngineApp({ workflows: [FlowV1, FlowV2], store });
    await app.client.start('orphans.flow', 'a');
    app.clock.advance('10m');
    expect(await app.worker.drain()).toBe(1);
    app.clock.advance('10m');
    expect(await app.worker.drain()).toBe(0);
    expect(undeclaredWarnings()).toEqual([]);
  });
});
