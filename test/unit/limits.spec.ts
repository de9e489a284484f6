import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** How many executions of each key run at once, at most. */
const running = new Map<string, number>();
const peak = new Map<string, number>();

@Workflow('limits.per-key', { concurrency: { perKey: 1, limit: 3 } })
class PerKey {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('work', async () => {
      const now = (running.get(input.key) ?? 0) + 1;
      running.set(input.key, now);
      peak.set(input.key, Math.max(peak.get(input.key) ?? 0, now));
      const all = [...running.values()].reduce((a, b) => a + b, 0);
      peak.set('*', Math.max(peak.get('*') ?? 0, all));
      await new Promise((resolve) => setTimeout(resolve, 5));
      running.set(input.key, (running.get(input.key) ?? 1) - 1);
    });
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('concurrency limits', () => {
  it('never run two instances of one key at once, nor more than the limit in all, and one busy key holds back no other', async () => {
    app = await createEngineApp({ workflows: [PerKey], worker: { enabled: false, concurrency: 10 } });
    const keys = ['a', 'a', 'a', 'b', 'b', 'c', 'd', 'e'];
    await Promise.all(keys.map((key, i) => app.client.start(PerKey, { key }, { id: `k-${i}`, concurrencyKey: key })));
    // Every claim leases at most one instance of a key and three in all; drain runs until none is left.
    let executions = 0;
    for (let round = 0; round < 10 && executions < keys.length; round++) executions += await app.worker.drain();
    expect(executions).toBe(keys.length);
    expect((await app.client.list({ status: 'completed' })).length).toBe(keys.length);
    for (const key of ['a', 'b', 'c', 'd', 'e']) expect(peak.get(key)).toBe(1);
    expect(peak.get('*')).toBeLessThanOrEqual(3);
    expect(peak.get('*')).toBeGreaterThanOrEqual(2);
  });
});

@Workflow('limits.rate', { rateLimit: { limit: { max: 1, duration: '1h' } } })
class Rated {
  async run(ctx: WorkflowContext) {
    await ctx.step('work', async () => 1);
  }
}

describe('rate limits', () => {
  it('a purge with a cutoff in the future leaves the open window: no more executions start in it', async () => {
    app = await createEngineApp({ workflows: [Rated] });
    await app.client.start(Rated, {}, { id: 'r-1' });
    await app.client.start(Rated, {}, { id: 'r-2' });
    expect(await app.worker.drain()).toBe(1);
    // Every finished instance and every expired window goes; the window that runs for another hour stays.
    const purged = await app.client.purge({ olderThan: new Date(app.clock.now() + 86_400_000) });
    expect(purged).toMatchObject({ instances: 1, rateLimits: 0 });
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('1h');
    expect(await app.worker.drain()).toBe(1);
  });
});
