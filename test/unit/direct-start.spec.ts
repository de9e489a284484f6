import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  type WorkflowClaim,
  type WorkflowClaimRequest,
  type WorkflowContext,
} from '../../src/index.js';
import { systemClock, type WorkflowClock } from '../../src/time/workflow-clock.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** Counts claims, so a test can tell a local start that ran at once from one that waited for a claim. */
class CountingStore extends InMemoryWorkflowStore {
  claims = 0;
  override async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    this.claims++;
    return super.claim(request);
  }
}

let gate: Promise<void> = Promise.resolve();

@Workflow('direct.plain')
class Plain {
  async run(ctx: WorkflowContext, input: number) {
    await ctx.step('wait', () => gate);
    return input * 2;
  }
}

@Workflow('direct.limited', { concurrency: { limit: 5 } })
class Limited {
  async run(ctx: WorkflowContext, input: number) {
    return ctx.step('double', () => input * 2);
  }
}

let app: EngineApp<CountingStore, WorkflowClock> | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  gate = Promise.resolve();
});

async function boot(store: CountingStore, concurrency = 10) {
  app = await createEngineApp({
    workflows: [Plain, Limited],
    store,
    clock: systemClock,
    worker: { pollInterval: '1h', concurrency },
  });
  await new Promise((resolve) => setTimeout(resolve, 10)); // the loop's first claim
  return app.client;
}

describe('local starts', () => {
  it('run at once in a free slot, created already leased, without a claim', async () => {
    const store = new CountingStore();
    const client = await boot(store);
    const before = store.claims;
    const handle = await client.start(Plain, 21);
    expect(await handle.result({ timeout: '2s' })).toBe(42);
    expect((await handle.status()).runs).toBe(1);
    expect(store.claims).toBe(before);
  });

  it('go through claims when every slot is taken, and run when one frees up', async () => {
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    const store = new CountingStore();
    const client = await boot(store, 2);
    const handles = await Promise.all([1, 2, 3].map((n) => client.start(Plain, n)));
    const statuses = await Promise.all(handles.map((h) => h.status()));
    expect(statuses.map((s) => s.status)).toEqual(['running', 'running', 'pending']);
    open();
    expect(await Promise.all(handles.map((h) => h.result({ timeout: '2s' })))).toEqual([2, 4, 6]);
  });

  it('of a workflow with limits go through claims, which count the limits', async () => {
    const store = new CountingStore();
    const client = await boot(store);
    const before = store.claims;
    const handle = await client.start(Limited, 4);
    expect(await handle.result({ timeout: '2s' })).toBe(8);
    expect(store.claims).toBeGreaterThan(before);
  });
});
