import { describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, type WorkflowInstance } from '../../src/index.js';
import {
  BASE_TIME as T,
  claimRequest,
  lease,
  newInstance,
  newSignal,
  settle,
} from '../../src/testing/store-fixtures.js';

// The in-memory store keeps its due instances in a queue (a heap by wake-up time feeding one in
// claim order), whose entries can go stale as instances sleep, wake, finish or are deleted. These
// check each way an instance changes place, then random histories against the plain definition.

const ids = (instances: readonly WorkflowInstance[]) => instances.map((instance) => instance.id);
const claimIds = async (store: InMemoryWorkflowStore, now: number, limit = 100, workflow = 'w') =>
  ids((await store.claim(claimRequest(workflow, { now, limit }))).instances);

describe('InMemoryWorkflowStore due queue', () => {
  it('takes a sleeping instance when it wakes, not before, and never at the time it slept from', async () => {
    const store = new InMemoryWorkflowStore();
    const { token, cursor } = await lease(store, newInstance('sleeper', 'w'));
    await store.write('sleeper', token, {
      now: T + 1,
      entries: [],
      status: 'suspended',
      release: { wakeAt: T + 500, waits: [], signalCursor: cursor },
    });
    expect(await claimIds(store, T + 499)).toEqual([]);
    expect(await claimIds(store, T + 500)).toEqual(['sleeper']);
  });

  it('takes an instance a signal, a cancel or a reopen makes due at once, however far its wake-up was', async () => {
    const store = new InMemoryWorkflowStore();
    await settle(store, newInstance('waiter', 'w'), 'suspended', {
      wakeAt: T + 1e9,
      waits: [{ name: 'go', key: null }],
    });
    await settle(store, newInstance('cancelled', 'w'), 'suspended', { wakeAt: null });
    await settle(store, newInstance('failed', 'w'), 'failed');
    expect(await claimIds(store, T + 10)).toEqual([]);

    expect((await store.signal(newSignal('go', { now: T + 20 }))).woken).toBe(1);
    expect(await store.requestCancel('cancelled', { reason: 'stop', terminate: false, now: T + 21 })).toBe(true);
    const reopen = {
      expect: { status: 'failed' as const, runs: 1 },
      status: 'pending' as const,
      error: null,
      entries: [],
      now: T + 22,
    };
    expect(await store.reopen('failed', reopen)).toBe(true);
    expect(await claimIds(store, T + 30)).toEqual(['waiter', 'cancelled', 'failed']);
  });

  it('wakes with a signal the suspended instances waiting for it, again after they ran and suspended anew', async () => {
    const store = new InMemoryWorkflowStore();
    await settle(store, newInstance('done', 'w'), 'completed', { waits: [{ name: 'go', key: null }] });
    await settle(store, newInstance('other', 'w'), 'suspended', { waits: [{ name: 'stop', key: null }] });
    await settle(store, newInstance('keyed', 'w'), 'suspended', { waits: [{ name: 'go', key: 'k' }] });
    const { token, cursor } = await lease(store, newInstance('twice', 'w'));
    const suspend = {
      now: T + 1,
      entries: [],
      status: 'suspended' as const,
      release: { wakeAt: null, waits: [{ name: 'go', key: null }], signalCursor: cursor },
    };
    await store.write('twice', token, suspend);
    expect((await store.signal(newSignal('go', { now: T + 2 }))).woken).toBe(1);
    const run = claimRequest('w', { now: T + 3 });
    const claimed = await store.claim(run);
    expect(ids(claimed.instances)).toEqual(['twice']);
    // Running now: a signal for it does not count it woken, until it suspends again.
    expect((await store.signal(newSignal('go', { now: T + 4, dedupeId: 'second' }))).woken).toBe(0);
    const again = {
      ...suspend,
      now: T + 5,
      release: { wakeAt: null, waits: [{ name: 'go', key: null }], signalCursor: claimed.lastSignalId + 1 },
    };
    expect(await store.write('twice', run.token, again)).toBe(true);
    expect((await store.signal(newSignal('go', { now: T + 6, dedupeId: 'third' }))).woken).toBe(1);
    expect(await claimIds(store, T + 7)).toEqual(['twice']);
  });

  it('takes a rescheduled instance at its new wake-up only', async () => {
    const store = new InMemoryWorkflowStore();
    const { token, cursor } = await lease(store, newInstance('moved', 'w', { wakeAt: T }));
    // Put back due later than it was: the place it had (due at T) must not count any more.
    await store.write('moved', token, {
      now: T + 1,
      entries: [],
      status: 'pending',
      release: { wakeAt: T + 300, waits: [], signalCursor: cursor },
    });
    expect(await claimIds(store, T + 299)).toEqual([]);
    expect(await claimIds(store, T + 300)).toEqual(['moved']);
  });

  it('takes a leased instance again only once its lease ended, a renewed one at its new end', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('held', 'w'));
    const first = claimRequest('w', { now: T, leaseUntil: T + 100 });
    expect(ids((await store.claim(first)).instances)).toEqual(['held']);
    expect(await claimIds(store, T + 100)).toEqual([]);
    expect(await store.renew('held', first.token, T + 200)).not.toBeNull();
    expect(await claimIds(store, T + 101)).toEqual([]);
    expect(await claimIds(store, T + 200)).toEqual([]);
    const again = await store.claim(claimRequest('w', { now: T + 201 }));
    expect(again.instances.map((instance) => [instance.id, instance.runs])).toEqual([['held', 2]]);
  });

  it('takes an instance leased at its creation once that lease ended', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('direct', 'w', { lease: { token: 't-1', owner: 'starter', leaseUntil: T + 50 } }));
    expect(await claimIds(store, T + 50)).toEqual([]);
    expect(await claimIds(store, T + 51)).toEqual(['direct']);
  });

  it('orders by priority before wake-up among the due, whenever each became due', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('early', 'w', { wakeAt: T }));
    await store.create(newInstance('urgent-late', 'w', { wakeAt: T + 50, priority: -1 }));
    await store.create(newInstance('low', 'w', { wakeAt: T, priority: 1 }));
    await store.create(newInstance('not-yet', 'w', { wakeAt: T + 60, priority: -5 }));
    expect(await claimIds(store, T + 10, 1)).toEqual(['early']);
    expect(await claimIds(store, T + 55)).toEqual(['urgent-late', 'low']);
    expect(await claimIds(store, T + 60)).toEqual(['not-yet']);
  });

  it('passes over, and keeps, instances of workflows or versions the claim does not run', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('other-1', 'other', { priority: -1 }));
    await store.create(newInstance('v2', 'w', { version: 2, priority: -1 }));
    await store.create(newInstance('mine', 'w'));
    expect(await claimIds(store, T, 1)).toEqual(['mine']);
    expect(await claimIds(store, T, 5, 'other')).toEqual(['other-1']);
    const v2 = await store.claim(claimRequest('w', { now: T, workflows: [{ name: 'w', version: 2 }] }));
    expect(ids(v2.instances)).toEqual(['v2']);
  });

  it('does not take at an earlier now what a later claim saw due', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('later', 'w', { wakeAt: T + 100, priority: -1 }));
    await store.create(newInstance('now', 'w', { wakeAt: T }));
    expect(await claimIds(store, T + 200, 0)).toEqual([]);
    expect(await claimIds(store, T + 50)).toEqual(['now']);
    expect(await claimIds(store, T + 100)).toEqual(['later']);
  });

  it('finds the one instance a concurrency key lets through far behind the ones it holds back', async () => {
    const store = new InMemoryWorkflowStore();
    for (let i = 0; i < 50; i++)
      await store.create(newInstance(`a-${String(i).padStart(2, '0')}`, 'w', { concurrencyKey: 'a' }));
    await store.create(newInstance('b', 'w', { concurrencyKey: 'b', wakeAt: T + 1 }));
    const limits = [{ workflow: 'w', limit: null, perKey: 1 }];
    const first = await store.claim(claimRequest('w', { now: T + 1, limit: 2, limits }));
    expect(ids(first.instances)).toEqual(['a-00', 'b']);
    expect(ids((await store.claim(claimRequest('w', { now: T + 1, limit: 2, limits }))).instances)).toEqual([]);
    // Its slot frees when its lease ends (not released): the next in claim order takes it.
    const after = await store.claim(claimRequest('w', { now: T + 30_002, limit: 2, limits }));
    expect(ids(after.instances)).toEqual(['a-00', 'b']);
  });

  it('counts a finished instance whose lease was never released against a concurrency limit until the lease ends', async () => {
    const store = new InMemoryWorkflowStore();
    await store.create(newInstance('done', 'w'));
    await store.create(newInstance('next', 'w', { wakeAt: T + 1 }));
    const first = claimRequest('w', { now: T, limit: 1, leaseUntil: T + 100 });
    expect(ids((await store.claim(first)).instances)).toEqual(['done']);
    expect(await store.write('done', first.token, { now: T + 1, entries: [], status: 'completed' })).toBe(true);
    const limits = [{ workflow: 'w', limit: 1, perKey: null }];
    expect(ids((await store.claim(claimRequest('w', { now: T + 100, limits }))).instances)).toEqual([]);
    expect(ids((await store.claim(claimRequest('w', { now: T + 101, limits }))).instances)).toEqual(['next']);
  });

  it('takes what a rate window leaves room for, and the rest when the next window opens', async () => {
    const store = new InMemoryWorkflowStore();
    for (let i = 0; i < 5; i++) await store.create(newInstance(`r-${i}`, 'w'));
    const rateLimits = [{ workflow: 'w', limit: { max: 2, duration: 1_000 }, perKey: null }];
    expect(ids((await store.claim(claimRequest('w', { now: T, rateLimits }))).instances)).toEqual(['r-0', 'r-1']);
    expect(ids((await store.claim(claimRequest('w', { now: T + 999, rateLimits }))).instances)).toEqual([]);
    expect(ids((await store.claim(claimRequest('w', { now: T + 1_000, rateLimits }))).instances)).toEqual([
      'r-2',
      'r-3',
    ]);
  });

  it('stays right through many instances finished under long leases (the queue compacts)', async () => {
    const store = new InMemoryWorkflowStore();
    for (let i = 0; i < 3_000; i++)
      await store.create(newInstance(`c-${String(i).padStart(4, '0')}`, 'w', { wakeAt: T + (i % 3) }));
    let taken = 0;
    for (let round = 0; taken < 3_000; round++) {
      const request = claimRequest('w', { now: T + 10, limit: 7, leaseUntil: T + 1e9 });
      const claim = await store.claim(request);
      expect(claim.instances.length).toBe(Math.min(7, 3_000 - taken));
      for (const instance of claim.instances) {
        const release = { wakeAt: null, waits: [], signalCursor: claim.lastSignalId };
        expect(
          await store.write(instance.id, request.token, { now: T + 10, entries: [], status: 'completed', release }),
        ).toBe(true);
      }
      taken += claim.instances.length;
    }
    await store.create(newInstance('last', 'w'));
    expect(await claimIds(store, T + 10)).toEqual(['last']);
  });

  it('claims what the plain definition says, through random histories', async () => {
    for (let seed = 1; seed <= 20; seed++) await randomHistory(seed);
  });
});

/** A small deterministic generator, so a failure can be replayed by its seed. */
function numbers(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/**
 * Random creates, claims (now mostly moving on, sometimes back), sleeps, completions, signals,
 * cancels, deletes, reopens and renewals; before each claim, what it must take is worked out from
 * `list()`: unfinished, due, no live lease, of a version claimed, in claim order, the first `limit`.
 */
async function randomHistory(seed: number): Promise<void> {
  const random = numbers(seed);
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  const store = new InMemoryWorkflowStore();
  const held = new Map<string, { token: string; cursor: number }>();
  let now = T;
  let created = 0;
  for (let step = 0; step < 400; step++) {
    now += Math.floor(random() * 30) - 5;
    const all = await store.list({ limit: 10_000, offset: 0 });
    const roll = random();
    if (roll < 0.3) {
      const id = `r${seed}-${created++}`;
      const version = random() < 0.9 ? 1 : 2;
      await store.create(
        newInstance(id, 'w', {
          version,
          now,
          wakeAt: now + Math.floor(random() * 60) - 20,
          priority: Math.floor(random() * 3) - 1,
        }),
      );
    } else if (roll < 0.6) {
      const limit = 1 + Math.floor(random() * 4);
      const expected = all
        .filter((i) => ['pending', 'running', 'suspended', 'compensating'].includes(i.status))
        .filter((i) => i.version === 1 && i.wakeAt !== null && i.wakeAt <= now)
        .filter((i) => !(i.leaseToken !== null && i.leaseUntil !== null && i.leaseUntil >= now))
        .sort(
          (a, b) =>
            a.priority - b.priority || a.wakeAt! - b.wakeAt! || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1),
        )
        .slice(0, limit);
      const request = claimRequest('w', { now, limit, leaseUntil: now + Math.floor(random() * 80) });
      const claim = await store.claim(request);
      expect(ids(claim.instances), `seed ${seed}, step ${step}`).toEqual(ids(expected));
      for (const instance of claim.instances)
        held.set(instance.id, { token: request.token, cursor: claim.lastSignalId });
    } else {
      const [id, lease] = pick([...held]) ?? [];
      const target = pick(all);
      const action = random();
      if (id && lease && action < 0.3) {
        const wakeAt = random() < 0.2 ? null : now + Math.floor(random() * 60);
        const waits = random() < 0.5 ? [{ name: 'ping', key: null }] : [];
        const status = wakeAt === null && waits.length === 0 ? 'completed' : 'suspended';
        await store.write(id, lease.token, {
          now,
          entries: [],
          status,
          release: { wakeAt, waits, signalCursor: lease.cursor },
        });
        held.delete(id);
      } else if (id && lease && action < 0.4) {
        await store.renew(id, lease.token, now + Math.floor(random() * 80));
      } else if (action < 0.55) {
        await store.signal(newSignal('ping', { now }));
      } else if (target && action < 0.7) {
        await store.requestCancel(target.id, { reason: 'random', terminate: random() < 0.3, now });
      } else if (target && action < 0.8) {
        await store.delete(target.id, [target.status]);
      } else if (target && action < 0.9 && target.status === 'completed') {
        await store.reopen(target.id, {
          expect: { status: 'completed', runs: target.runs },
          status: 'pending',
          error: null,
          entries: [],
          now,
        });
      }
    }
  }
}
