import { describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { BASE_TIME as T, claimRequest, newInstance, settle } from '../../src/testing/store-fixtures.js';

// The in-memory store looks only at its unfinished instances when claiming, and without limits
// sorts out only the first `limit` in claim order: these check both against the plain definition.

/** A small deterministic generator, so a failure can be replayed. */
function numbers(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('InMemoryWorkflowStore claims', () => {
  it('take due instances in claim order (priority, wakeAt, createdAt, id) whatever the claim size, past finished ones', async () => {
    const random = numbers(7);
    const store = new InMemoryWorkflowStore();
    const expected: Array<{ id: string; priority: number; wakeAt: number; createdAt: number }> = [];
    const pending: Array<ReturnType<typeof newInstance>> = [];
    for (let i = 0; i < 300; i++) {
      const id = `i-${Math.floor(random() * 1e6).toString(36)}-${i}`;
      const priority = Math.floor(random() * 3) - 1;
      const createdAt = T + Math.floor(random() * 20);
      const wakeAt = createdAt + Math.floor(random() * 20);
      const init = newInstance(id, 'order', { priority, now: createdAt, wakeAt });
      if (random() < 0.3) {
        await settle(store, newInstance(id, 'order', { priority, now: createdAt }), 'completed');
        continue;
      }
      pending.push(init);
      expected.push({ id, priority, wakeAt, createdAt });
    }
    // Created after the finished ones (whose setup claims them), so the claims below meet both.
    for (const init of pending) await store.create(init);
    expected.sort(
      (a, b) => a.priority - b.priority || a.wakeAt - b.wakeAt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1),
    );

    const taken: string[] = [];
    for (let size = 1; taken.length < expected.length; size = (size % 7) + 1) {
      const claim = await store.claim(claimRequest('order', { now: T + 100, limit: size }));
      expect(claim.instances.length).toBe(Math.min(size, expected.length - taken.length));
      taken.push(...claim.instances.map((instance) => instance.id));
    }
    expect(taken).toEqual(expected.map((instance) => instance.id));
    expect((await store.claim(claimRequest('order', { now: T + 100 }))).instances).toEqual([]);
  });

  it('never take a deleted instance, and take a reopened one again', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('gone', 'w'));
    expect(await store.delete('gone', ['pending'])).toBe(true);
    await settle(store, newInstance('again', 'w'), 'completed');
    expect((await store.claim(claimRequest('w', { now: T + 10 }))).instances).toEqual([]);

    const reopened = await store.reopen('again', {
      expect: { status: 'completed', runs: 1 },
      status: 'pending',
      error: null,
      entries: [],
      now: T + 20,
    });
    expect(reopened).toBe(true);
    expect((await store.claim(claimRequest('w', { now: T + 20 }))).instances.map((instance) => instance.id)).toEqual([
      'again',
    ]);
  });

  it('take an instance a lease holder wrote back to an unfinished status once its lease ends', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('back', 'w'));
    const first = claimRequest('w', { now: T, leaseUntil: T + 1_000 });
    expect((await store.claim(first)).instances).toHaveLength(1);
    expect(await store.write('back', first.token, { now: T + 1, entries: [], status: 'completed' })).toBe(true);
    expect((await store.claim(claimRequest('w', { now: T + 2_000 }))).instances).toEqual([]);
    expect(await store.write('back', first.token, { now: T + 3, entries: [], status: 'running' })).toBe(true);
    expect((await store.claim(claimRequest('w', { now: T + 2_000 }))).instances.map((instance) => instance.id)).toEqual(
      ['back'],
    );
  });
});
