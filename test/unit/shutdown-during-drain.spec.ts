import { describe, expect, it } from 'vitest';
import { loopWith } from './support/leased-loop.js';

// A shutdown that begins while a drain()'s claim is on its way to the store: the store (or the
// application's pool, ended in `onApplicationShutdown`) closes right after the shutdown resolves,
// so what that claim leases must be handed back before then, not run against a closed store.
describe('a shutdown while a drain() claims', () => {
  it('waits for the claim, runs what it leased with the aborted signal, and resolves after that hands back', async () => {
    let answer!: (items: string[]) => void;
    const seen: Array<[string, boolean]> = [];
    const loop = loopWith({
      claim: () => new Promise<string[]>((resolve) => (answer = resolve)),
      execute: async (item, shutdown) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        seen.push([`${item} handed back`, shutdown.aborted]);
      },
    });
    const drained = loop.drain();
    let stopped = false;
    const stopping = loop.shutdown().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    answer(['a', 'b']);
    await stopping;
    expect(seen).toEqual([
      ['a handed back', true],
      ['b handed back', true],
    ]);
    expect(await drained).toBe(2);
  });

  it('stops waiting for a claim that does not answer after shutdownTimeout', async () => {
    const loop = loopWith({ shutdownTimeout: 30, claim: () => new Promise<string[]>(() => undefined) });
    void loop.drain();
    const started = Date.now();
    await loop.shutdown();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
