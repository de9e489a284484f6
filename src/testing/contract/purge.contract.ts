import { FINISHED_STATUSES, UNFINISHED_STATUSES, type WorkflowStatus } from '../../storage/workflow-instance.js';
import { CHILD_ENDED_SIGNAL } from '../../storage/workflow-store-signals.js';
import type { NewWorkflowInstance, WorkflowStore } from '../../storage/workflow-store.js';
import {
  claimRequest,
  details,
  lease,
  newInstance,
  newSignal,
  pad,
  purgeSpan,
  range,
  settle,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `purge`: finished instances, old signals and old rate windows go, each bounded by `limit`. */
export function purgeContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('purge', () => {
    const all = [...FINISHED_STATUSES];

    it('purge: deletes finished instances of the listed statuses with updatedAt < before, oldest first, up to limit', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const ended: Array<[string, WorkflowStatus, number]> = [
        ['c1', 'completed', 30],
        ['c2', 'completed', 10],
        ['c3', 'completed', 20],
        ['f1', 'failed', 15],
        ['x1', 'cancelled', 5],
        ['edge', 'completed', 100],
      ];
      for (const [name, status, at] of ended) {
        await settle(suite.store, newInstance(s.id(name), s.workflow, { now: t }), status, { at: t + at });
      }
      const query = { statuses: ['completed', 'failed'] as WorkflowStatus[], before: t + 100 };
      expect(await suite.store.purge({ ...query, limit: 2 })).toEqual({
        instances: 2,
        signals: 0,
        rateLimits: 0,
        debounceKeys: 0,
      });
      const left = async () =>
        (await suite.store.list({ workflow: s.workflow, limit: 100, offset: 0 })).map((i) => i.id).sort();
      expect(await left()).toEqual(['c1', 'c3', 'edge', 'x1'].map(s.id));
      expect((await suite.store.purge({ ...query, limit: 100 })).instances).toBe(2);
      expect(await left()).toEqual(['edge', 'x1'].map(s.id));
      expect(await suite.store.purge({ ...query, limit: 100 })).toEqual({
        instances: 0,
        signals: 0,
        rateLimits: 0,
        debounceKeys: 0,
      });
      const recreated = await suite.store.create(newInstance(s.id('c2'), s.workflow, { now: t + 200 }));
      expect(recreated.created).toBe(true);
      expect((await details(suite.store, s.id('c2'))).journal).toEqual([]);
    });

    it('purge: never deletes unfinished instances, whatever statuses says', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      await suite.store.create(newInstance(s.id('pending'), `${s.workflow}-p`, { now: t }));
      await lease(suite.store, newInstance(s.id('running'), `${s.workflow}-r`, { now: t }));
      await settle(suite.store, newInstance(s.id('suspended'), `${s.workflow}-s`, { now: t }), 'suspended');
      await settle(suite.store, newInstance(s.id('compensating'), `${s.workflow}-c`, { now: t }), 'compensating');
      const result = await suite.store.purge({
        statuses: [...UNFINISHED_STATUSES, ...FINISHED_STATUSES],
        before: t + 10_000,
        limit: 100,
      });
      expect(result.instances).toBe(0);
      for (const status of UNFINISHED_STATUSES) expect((await details(suite.store, s.id(status))).status).toBe(status);
    });

    it('purge: deletes signals with createdAt < before, lowest id first, up to limit, never the newest', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const n = s.signal('n');
      const sent = [];
      for (const i of [1, 2, 3, 4]) sent.push(await suite.store.signal(newSignal(n, { payload: { i }, now: t + i })));
      const left = async () =>
        (await suite.store.signals({ name: n, key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).map(
          (r) => r.id,
        );
      expect(await suite.store.purge({ statuses: all, before: t + 3, limit: 100 })).toEqual({
        instances: 0,
        signals: 2,
        rateLimits: 0,
        debounceKeys: 0,
      });
      expect(await left()).toEqual([sent[2]!.id, sent[3]!.id]);
      expect((await suite.store.purge({ statuses: all, before: t + 1_000, limit: 1 })).signals).toBe(1);
      expect(await left()).toEqual([sent[3]!.id]);
      expect((await suite.store.purge({ statuses: all, before: t + 1_000, limit: 100 })).signals).toBe(0);
      expect(await left()).toEqual([sent[3]!.id]);
      const next = await suite.store.signal(newSignal(n, { now: t + 5 }));
      expect(next.id).toBeGreaterThan(sent[3]!.id);
      const { instance } = await suite.store.create(newInstance(s.id('late'), s.workflow, { now: t + 6 }));
      expect(instance.signalCursor).toBe(next.id);
    });

    it('purge: deletes rate-limit windows that ended before before, and leaves open ones counting', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const rateLimits = [
        { workflow: s.workflow, limit: { max: 5, duration: 1_000 }, perKey: { max: 1, duration: 5_000 } },
      ];
      await suite.store.create(newInstance(s.id('a'), s.workflow, { rateLimitKey: 'k', now: t }));
      await suite.store.create(newInstance(s.id('b'), s.workflow, { rateLimitKey: 'k', now: t + 1 }));
      const claim = (now: number) =>
        suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, rateLimits }));
      expect((await claim(t + 10)).instances.map((i) => i.id)).toEqual([s.id('a')]);
      expect((await suite.store.purge({ statuses: all, before: t + 500, limit: 100 })).rateLimits).toBe(0);
      expect((await suite.store.purge({ statuses: all, before: t + 2_000, limit: 100 })).rateLimits).toBe(1);
      expect((await claim(t + 2_000)).instances).toEqual([]);
      expect((await suite.store.purge({ statuses: all, before: t + 6_000, limit: 100 })).rateLimits).toBe(1);
      expect((await claim(t + 6_000)).instances.map((i) => i.id)).toEqual([s.id('b')]);
    });

    it('purge: limit applies to rate-limit windows too, the earliest ended first', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const rateLimits = [{ workflow: s.workflow, limit: null, perKey: { max: 1, duration: 1_000 } }];
      // Three key windows, opened by three claims: they end at t + 1010, t + 1020 and t + 1030.
      for (const [i, key] of ['k1', 'k2', 'k3'].entries()) {
        await suite.store.create(newInstance(s.id(key), s.workflow, { rateLimitKey: key, now: t }));
        const now = t + 10 * (i + 1);
        const claim = await suite.store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, rateLimits }));
        expect(claim.instances.map((instance) => instance.id)).toEqual([s.id(key)]);
      }
      const purge = (before: number, limit: number) => suite.store.purge({ statuses: all, before, limit });
      expect(await purge(t + 5_000, 2)).toEqual({ instances: 0, signals: 0, rateLimits: 2, debounceKeys: 0 });
      // The window left is the one that ended last: a cutoff between the ends finds none of the others.
      expect(await purge(t + 1_025, 2)).toEqual({ instances: 0, signals: 0, rateLimits: 0, debounceKeys: 0 });
      expect(await purge(t + 5_000, 2)).toEqual({ instances: 0, signals: 0, rateLimits: 1, debounceKeys: 0 });
    });

    it("purge: keeps a child's end signal, and the finished child, while the child's parent is unfinished", async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const [parent, child, doneParent, doneChild] = ['parent', 'child', 'done-parent', 'done-child'].map(s.id) as [
        string,
        string,
        string,
        string,
      ];
      // The parent sleeps (suspended) while its child ends; another parent ended with its child.
      await settle(suite.store, newInstance(parent, `${s.workflow}-p`, { now: t }), 'suspended', {
        at: t + 1,
        wakeAt: t + 70,
      });
      await endChild(suite.store, newInstance(child, `${s.workflow}-c`, { parentId: parent, now: t + 2 }), t + 3);
      await settle(suite.store, newInstance(doneParent, `${s.workflow}-dp`, { now: t }), 'completed', { at: t + 4 });
      await endChild(
        suite.store,
        newInstance(doneChild, `${s.workflow}-dc`, { parentId: doneParent, now: t + 5 }),
        t + 6,
      );
      // A child's end whose child is gone (deleted), and an ordinary signal: both go as before.
      await suite.store.signal(
        newSignal(CHILD_ENDED_SIGNAL, { key: s.id('gone'), dedupeId: s.id('gone'), now: t + 7 }),
      );
      await suite.store.signal(newSignal(s.signal('n'), { now: t + 8 }));
      await suite.store.signal(newSignal(s.signal('newest'), { now: t + 50 }));
      const ends = async (id: string) =>
        (
          await suite.store.signals({ name: CHILD_ENDED_SIGNAL, key: id, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })
        ).map((r) => r.payload);

      // The parent would take this end only after its sleep: purged, it would wait for it forever.
      for (const statuses of [['failed'] as WorkflowStatus[], all])
        await suite.store.purge({ statuses, before: t + 60, limit: 100 });
      expect(await ends(child)).toEqual([{ status: 'completed', output: 42, error: null }]);
      expect((await details(suite.store, child)).status).toBe('completed');
      expect(await ends(doneChild)).toEqual([]);
      expect(await suite.store.get(doneChild)).toBeNull();
      expect(await suite.store.get(doneParent)).toBeNull();
      expect(await ends(s.id('gone'))).toEqual([]);

      // Once the parent has ended, its child's end and the child go like any other.
      await settle(suite.store, newInstance(parent, `${s.workflow}-p`, { now: t + 70 }), 'completed', { at: t + 71 });
      expect(await suite.store.purge({ statuses: all, before: t + 100, limit: 100 })).toEqual({
        instances: 2,
        signals: 1,
        rateLimits: 0,
        debounceKeys: 0,
      });
      expect(await ends(child)).toEqual([]);
      expect(await suite.store.get(child)).toBeNull();
    });

    it('purge: a purge racing reopens never deletes a reopened instance', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const ids = range(20).map((i) => s.id(pad(i)));
      for (const [i, id] of ids.entries())
        await settle(suite.store, newInstance(id, s.workflow, { now: t }), 'failed', { at: t + 1 + i });
      const reopen = (id: string) =>
        suite.store.reopen(id, {
          expect: { status: 'failed', runs: 1 },
          status: 'pending',
          error: null,
          entries: [],
          now: t + 5_000,
        });
      const calls: Array<Promise<unknown>> = ids.slice(0, 10).map(reopen);
      calls.push(suite.store.purge({ statuses: ['failed'], before: t + 1_000, limit: 100 }));
      calls.push(...ids.slice(10).map(reopen));
      const results = await Promise.all(calls);
      const purged = results[10] as { instances: number };
      const reopened = [...results.slice(0, 10), ...results.slice(11)] as boolean[];
      for (const [i, id] of ids.entries()) {
        const found = await suite.store.get(id);
        if (reopened[i]) expect(found?.status, id).toBe('pending');
        else expect(found, id).toBeNull();
      }
      expect(purged.instances + reopened.filter(Boolean).length).toBe(20);
    });

    it('purge: racing reopens of parents with awaitedChildren, never takes a child or end that a reopened parent waits for', async () => {
      const t = await purgeSpan(suite.store);
      const s = testScope();
      const pairs = range(16).map((i) => [s.id(pad(i)), s.id(`${pad(i)}/c`)] as const);
      for (const [parent, child] of pairs) {
        await settle(suite.store, newInstance(parent, `${s.workflow}-p`, { now: t }), 'failed', { at: t + 1 });
        await endChild(suite.store, newInstance(child, `${s.workflow}-c`, { parentId: parent, now: t + 1 }), t + 2);
      }
      const reopen = (parent: string, child: string) =>
        suite.store.reopen(parent, {
          expect: { status: 'failed', runs: 1 },
          status: 'pending',
          error: null,
          entries: [],
          awaitedChildren: [child],
          now: t + 5_000,
        });
      const purge = () => suite.store.purge({ statuses: all, before: t + 1_000, limit: 100 });
      // A purge after every few reopens, so that purges land at different points of different reopens.
      const calls = pairs.flatMap(([parent, child], i) =>
        i % 4 === 1 ? [reopen(parent, child), purge()] : [reopen(parent, child)],
      );
      const results = await Promise.all(calls);
      const reopened = results.filter((result) => typeof result === 'boolean');
      for (const [i, [parent, child]] of pairs.entries()) {
        if (!reopened[i]) continue;
        expect((await suite.store.get(parent))?.status, parent).toBe('pending');
        expect((await suite.store.get(child))?.status, child).toBe('completed');
        expect(
          await suite.store.signals({
            name: CHILD_ENDED_SIGNAL,
            key: child,
            afterId: 0,
            upToId: Number.MAX_SAFE_INTEGER,
          }),
          child,
        ).toHaveLength(1);
      }
    });
  });
}

/** Leases the child `init` and ends it at `at` (output 42) with its end signal, as the engine's final write does. */
async function endChild(store: WorkflowStore, init: NewWorkflowInstance, at: number): Promise<void> {
  const { token, cursor } = await lease(store, init);
  const payload = { status: 'completed', output: 42, error: null };
  const signal = { name: CHILD_ENDED_SIGNAL, key: init.id, dedupeId: init.id, payload, now: at };
  const ok = await store.write(init.id, token, {
    now: at,
    entries: [],
    status: 'completed',
    output: 42,
    signal,
    release: { wakeAt: null, waits: [], signalCursor: cursor },
  });
  if (!ok) throw new Error(`Test setup: could not end ${init.id}.`);
}
