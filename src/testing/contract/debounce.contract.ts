import { BASE_TIME as T, claimRequest, idsOf, newInstance, range, testScope } from '../store-fixtures.js';
import type { NewWorkflowInstance } from '../../storage/workflow-store.js';
import type { ContractSuite } from './contract-suite.js';

const PERIOD = 5_000;

/**
 * `create()` with `debounce`: a burst of creates of one key makes one instance, which takes each
 * create's input and time until a claim takes it; concurrent creates of a key (several
 * connections at once) make one instance too.
 */
export function debounceContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;

  /** A debounced create of `key` at `now`, due `PERIOD` later, with a fresh id. */
  const debounced = (
    workflow: string,
    id: string,
    key: string,
    now: number,
    overrides: Partial<NewWorkflowInstance> = {},
  ): NewWorkflowInstance =>
    newInstance(id, workflow, {
      input: { from: id },
      now,
      wakeAt: now + PERIOD,
      debounce: { key, maxWait: null },
      ...overrides,
    });

  describe('debounce', () => {
    it('debounce: a second create of the key gives the unstarted instance its input and time, and creates nothing', async () => {
      const s = testScope();
      const first = await suite.store.create(
        debounced(s.workflow, s.id('a'), 'k', T, { timeout: 60_000, deadline: T + PERIOD + 60_000 }),
      );
      expect(first.created).toBe(true);
      const second = await suite.store.create(debounced(s.workflow, s.id('b'), 'k', T + 2_000));
      expect(second.created).toBe(false);
      expect(second.instance).toMatchObject({
        id: s.id('a'),
        status: 'pending',
        input: { from: s.id('b') },
        wakeAt: T + 2_000 + PERIOD,
        deadline: T + 2_000 + PERIOD + 60_000,
        updatedAt: T + 2_000,
        createdAt: T,
        runs: 0,
      });
      expect(await suite.store.get(s.id('b'))).toBeNull();
      expect(await suite.store.get(s.id('a'))).toMatchObject({
        input: { from: s.id('b') },
        wakeAt: T + 2_000 + PERIOD,
        deadline: T + 2_000 + PERIOD + 60_000,
      });
      expect(await suite.store.list({ workflow: s.workflow, limit: 10, offset: 0 })).toHaveLength(1);
    });

    it('debounce: maxWait bounds the wake-up at the first create plus maxWait', async () => {
      const s = testScope();
      const maxWait = 12_000;
      const at = (i: number) => T + i * 4_000;
      for (const i of range(5)) {
        const { instance } = await suite.store.create(
          debounced(s.workflow, s.id(`n${i}`), 'k', at(i), { debounce: { key: 'k', maxWait } }),
        );
        expect(instance.id).toBe(s.id('n0'));
        expect(instance.wakeAt).toBe(Math.min(at(i) + PERIOD, T + maxWait));
      }
      expect((await suite.store.get(s.id('n0')))!.wakeAt).toBe(T + maxWait);
    });

    it('debounce: once a claim took the instance, the next create of the key makes a new one, whose burst starts then', async () => {
      const s = testScope();
      await suite.store.create(debounced(s.workflow, s.id('a'), 'k', T, { debounce: { key: 'k', maxWait: 10_000 } }));
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + PERIOD }));
      expect(idsOf(claim)).toEqual([s.id('a')]);
      const later = T + PERIOD + 1;
      const next = await suite.store.create(
        debounced(s.workflow, s.id('b'), 'k', later, { debounce: { key: 'k', maxWait: 10_000 } }),
      );
      expect(next.created).toBe(true);
      expect(next.instance).toMatchObject({ id: s.id('b'), wakeAt: later + PERIOD });
      expect(await suite.store.get(s.id('a'))).toMatchObject({ input: { from: s.id('a') }, runs: 1 });
      // The new burst's maxWait counts from its own first create.
      const third = await suite.store.create(
        debounced(s.workflow, s.id('c'), 'k', later + 8_000, { debounce: { key: 'k', maxWait: 10_000 } }),
      );
      expect(third.instance).toMatchObject({ id: s.id('b'), wakeAt: later + 10_000, input: { from: s.id('c') } });
    });

    it('debounce: a key belongs to its workflow, and an instance asked to stop or gone is never reused', async () => {
      const s = testScope();
      const other = `${s.workflow}:other`;
      await suite.store.create(debounced(s.workflow, s.id('a'), 'k', T));
      expect((await suite.store.create(debounced(other, s.id('b'), 'k', T))).created).toBe(true);
      expect(await suite.store.requestCancel(s.id('a'), { reason: null, now: T + 1, terminate: false })).toBe(true);
      const afterCancel = await suite.store.create(debounced(s.workflow, s.id('c'), 'k', T + 2));
      expect(afterCancel).toMatchObject({ created: true, instance: { id: s.id('c') } });
      expect(await suite.store.delete(s.id('b'), ['pending'])).toBe(true);
      const afterDelete = await suite.store.create(debounced(other, s.id('d'), 'k', T + 3));
      expect(afterDelete).toMatchObject({ created: true, instance: { id: s.id('d') } });
    });

    it('debounce: concurrent creates of one key make one instance, with the input of one of them', async () => {
      const s = testScope();
      const ids = range(8).map((i) => s.id(`r${i}`));
      const results = await Promise.all(ids.map((id, i) => suite.store.create(debounced(s.workflow, id, 'k', T + i))));
      expect(results.filter((result) => result.created)).toHaveLength(1);
      const winner = results.find((result) => result.created)!.instance.id;
      expect(new Set(results.map((result) => result.instance.id))).toEqual(new Set([winner]));
      const stored = await suite.store.list({ workflow: s.workflow, limit: 20, offset: 0 });
      expect(stored.map((instance) => instance.id)).toEqual([winner]);
      expect(ids.map((id) => ({ from: id }))).toContainEqual(stored[0]!.input);
    });

    it("debounce: purge() deletes the keys whose instance has started or is gone, and keeps an unstarted one's", async () => {
      // An empty store of its own when there is one, so the counts are this test's alone.
      const store = suite.emptyStore ? (await suite.emptyStore()).store : suite.store;
      const s = testScope();
      const idle = `${s.workflow}:idle`; // never claimed here
      const purge = () => store.purge({ statuses: ['completed'], before: T - 1, limit: 100 });
      const first = await purge(); // a shared store may hold other tests' keys
      await store.create(debounced(idle, s.id('waiting'), 'waiting', T));
      await store.create(debounced(s.workflow, s.id('started'), 'started', T));
      await store.create(debounced(s.workflow, s.id('gone'), 'gone', T));
      await store.create(debounced(idle, s.id('asked'), 'asked', T));
      expect(await store.requestCancel(s.id('asked'), { reason: null, now: T, terminate: false })).toBe(true);
      const request = claimRequest(s.workflow, { now: T + PERIOD, limit: 2 });
      const claim = await store.claim(request);
      expect(idsOf(claim).sort()).toEqual([s.id('gone'), s.id('started')]);
      const ended = await store.write(s.id('gone'), request.token, {
        now: T + PERIOD,
        entries: [],
        status: 'completed',
        release: { wakeAt: null, waits: [], signalCursor: claim.lastSignalId },
      });
      expect(ended).toBe(true);
      expect(await store.delete(s.id('gone'), ['completed'])).toBe(true);

      const purged = await purge();
      if (suite.emptyStore) {
        expect(first.debounceKeys).toBe(0);
        expect(purged.debounceKeys).toBe(2); // "started" and "gone"; not "waiting", nor "asked" (never claimed)
        expect((await purge()).debounceKeys).toBe(0);
      } else expect(purged.debounceKeys).toBeGreaterThanOrEqual(2);

      // The unstarted instance still takes the next start of its key; the others' keys start anew.
      const joined = await store.create(debounced(idle, s.id('waiting-2'), 'waiting', T + 1));
      expect(joined).toMatchObject({
        created: false,
        instance: { id: s.id('waiting'), input: { from: s.id('waiting-2') } },
      });
      for (const key of ['started', 'gone']) {
        const next = await store.create(debounced(s.workflow, s.id(`${key}-2`), key, T + PERIOD + 1));
        expect(next).toMatchObject({ created: true, instance: { id: s.id(`${key}-2`) } });
        const again = await store.create(debounced(s.workflow, s.id(`${key}-3`), key, T + PERIOD + 2));
        expect(again).toMatchObject({ created: false, instance: { id: s.id(`${key}-2`) } });
      }
    });

    it("debounce: a purge racing creates that start a key's new burst never deletes the new burst's key", async () => {
      const s = testScope();
      const keys = range(8).map((i) => `k${i}`);
      for (const key of keys) await suite.store.create(debounced(s.workflow, s.id(`${key}-old`), key, T));
      const claim = await suite.store.claim(claimRequest(s.workflow, { now: T + PERIOD, limit: keys.length }));
      expect(claim.instances).toHaveLength(keys.length);
      // Each key's instance has started: a create of the key now makes a new one and points the key at it.
      const purge = () => suite.store.purge({ statuses: ['completed'], before: T - 1, limit: 1000 });
      const [created] = await Promise.all([
        Promise.all(keys.map((key) => suite.store.create(debounced(s.workflow, s.id(`${key}-new`), key, T + PERIOD)))),
        purge(),
        purge(),
      ]);
      expect(created.every((result) => result.created)).toBe(true);
      await purge();
      // Whatever the order, each key still names its new, unstarted instance: the next start joins it.
      for (const key of keys) {
        const next = await suite.store.create(debounced(s.workflow, s.id(`${key}-next`), key, T + PERIOD + 1));
        expect(next).toMatchObject({ created: false, instance: { id: s.id(`${key}-new`) } });
      }
    });

    it('debounce: a key longer than the store keeps is refused, with nothing stored', async () => {
      const s = testScope();
      await expect(suite.store.create(debounced(s.workflow, s.id('a'), 'k'.repeat(256), T))).rejects.toThrow(
        /debounce key/,
      );
      expect(await suite.store.get(s.id('a'))).toBeNull();
    });
  });
}
