import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import type { WorkflowPurgeQuery, WorkflowPurgeResult } from '../../src/storage/workflow-store.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// purge() without `limit` goes on in batches until nothing is left, also when a batch deleted
// fewer than it asked for while more remained: a store that skips rows another transaction holds
// (PostgreSQL's SKIP LOCKED) does that.

/** A store whose purge deletes at most two of each kind per call, as if it skipped the rest. */
class SkippingStore extends InMemoryWorkflowStore {
  calls = 0;

  override purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    this.calls++;
    return super.purge({ ...query, limit: Math.min(query.limit, 2) });
  }
}

@Workflow('purge-batches.done')
class Done {
  async run(ctx: WorkflowContext) {
    return ctx.step('only', () => 'ok');
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('purge() without limit', () => {
  it('goes on while a batch deleted anything, not only while a batch was full', async () => {
    const store = new SkippingStore();
    app = await createEngineApp({ workflows: [Done], store });
    for (let i = 0; i < 5; i++) await app.client.start(Done, null, { id: `done-${i}` });
    await app.worker.drain();
    app.clock.advance('2d');
    const purged = await app.client.purge({ olderThan: '1d' });
    expect(purged.instances).toBe(5);
    expect(await app.client.list({ workflow: 'purge-batches.done' })).toEqual([]);
    // Three batches that deleted something (2, 2, 1) and one that found nothing left.
    expect(store.calls).toBe(4);
  });
});
