import type { WorkflowBulkChange } from '../../storage/workflow-store-bulk.js';
import { BULK_CHANGE_LIMIT } from '../../storage/workflow-store-bulk.js';
import type { WorkflowInstanceDetails, WorkflowStore } from '../../storage/workflow-store.js';
import {
  BASE_TIME as T,
  details,
  journalEntry,
  lease,
  newInstance,
  settle,
  testScope,
  type TestScope,
} from '../store-fixtures.js';
import { contractEngines } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

/** The states a page of a bulk action meets, each made in a workflow of its own (so each lease claims only it). */
const STATES = ['pending', 'suspended', 'leased', 'completed', 'compensating', 'paused', 'asked'] as const;
type State = (typeof STATES)[number];

/** Makes instance `id` in `state`; resolves to its lease token when it is leased. */
async function make(store: WorkflowStore, id: string, workflow: string, state: State): Promise<string | null> {
  const init = newInstance(id, workflow, { input: { n: 1 } });
  switch (state) {
    case 'pending':
      await store.create(init);
      return null;
    case 'suspended':
      await settle(store, init, 'suspended', { wakeAt: T + 5_000 });
      return null;
    case 'leased':
      return (await lease(store, init)).token;
    case 'completed':
    case 'compensating':
      await settle(store, init, state);
      return null;
    case 'paused':
      await store.create(init);
      await store.pause(id, { reason: 'first', now: T + 1 });
      return null;
    case 'asked':
      await store.create(init);
      await store.requestCancel(id, { reason: 'first', now: T + 1, terminate: false });
      return null;
  }
}

/** The single-instance call a bulk change repeats. */
function single(store: WorkflowStore, id: string, change: WorkflowBulkChange): Promise<boolean> {
  if (change.kind === 'cancel') return store.requestCancel(id, change.request);
  if (change.kind === 'pause') return store.pause(id, change.request);
  return store.resume(id, change.now);
}

/** An instance as a twin of another: its id, workflow, lease token and journal times set aside. */
function comparable(instance: WorkflowInstanceDetails): unknown {
  const { id: _id, workflow: _workflow, leaseToken, journal, ...rest } = instance;
  return { ...rest, leased: leaseToken !== null, journal: journal?.map((entry) => entry.name) };
}

async function waitFor(done: () => boolean, timeout: number): Promise<boolean> {
  for (let waited = 0; !done() && waited < timeout; waited += 10)
    await new Promise((resolve) => setTimeout(resolve, 10));
  return done();
}

/**
 * `changeMany` (a page of `cancelMany()`, `terminateMany()`, `pauseMany()`, `resumeMany()`): each
 * change is exactly what the single-instance call does, in one transaction per page; holders of
 * leases hear of it; an instance ending under it is changed or not, never half; the application's
 * transaction rolls it back; and the client's bulk actions, stopped between two pages (a crash),
 * can be run again and change each instance once.
 */
export function bulkContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('bulk changes', () => {
    const engines = contractEngines(suite);

    const changes: Array<[string, WorkflowBulkChange]> = [
      ['cancel', { kind: 'cancel', request: { reason: 'bulk', now: T + 100, terminate: false } }],
      ['terminate', { kind: 'cancel', request: { reason: 'bulk', now: T + 100, terminate: true } }],
      ['pause', { kind: 'pause', request: { reason: 'bulk', now: T + 100 } }],
      ['resume', { kind: 'resume', now: T + 100 }],
    ];
    for (const [label, change] of changes) {
      it(`changeMany (${label}): changes each instance exactly as the single call does, returns those it changed, and a repeat changes nothing`, async () => {
        const store = suite.store;
        if (!store.changeMany) return; // optional: the client then asks one instance at a time
        const s = testScope();
        const twin = (side: 'a' | 'b', state: State) => s.id(`${side}-${state}`);
        for (const side of ['a', 'b'] as const)
          for (const state of STATES) await make(store, twin(side, state), `${s.workflow}-${side}-${state}`, state);
        const bulk = await store.changeMany([...STATES.map((state) => twin('a', state)), s.id('unknown')], change);
        const singly: string[] = [];
        for (const state of STATES) if (await single(store, twin('b', state), change)) singly.push(state);
        expect(bulk.map((id) => id.slice(s.id('a-').length)).sort()).toEqual(singly.sort());
        for (const state of STATES) {
          expect(comparable(await details(store, twin('a', state))), state).toEqual(
            comparable(await details(store, twin('b', state))),
          );
        }
        const after = await Promise.all(STATES.map((state) => details(store, twin('a', state))));
        expect(
          await store.changeMany(
            STATES.map((state) => twin('a', state)),
            change,
          ),
        ).toEqual([]);
        expect(await Promise.all(STATES.map((state) => details(store, twin('a', state))))).toEqual(after);
      });
    }

    it('changeMany: refuses more ids than BULK_CHANGE_LIMIT, changing nothing', async () => {
      const store = suite.store;
      if (!store.changeMany) return;
      const s = testScope();
      await store.create(newInstance(s.id('a'), s.workflow));
      const before = await details(store, s.id('a'));
      const ids = [s.id('a'), ...Array.from({ length: BULK_CHANGE_LIMIT }, (_, n) => s.id(`none-${n}`))];
      await expect(
        store.changeMany(ids, { kind: 'cancel', request: { reason: null, now: T + 1, terminate: false } }),
      ).rejects.toThrow(RangeError);
      expect(await details(store, s.id('a'))).toEqual(before);
    });

    it('changeMany: beside the holders writing their ends, each instance is cancelled (and returned) or ended first (and not)', async () => {
      const store = suite.store;
      if (!store.changeMany) return;
      const s = testScope();
      const ids = Array.from({ length: 24 }, (_, n) => s.id(`i${String(n).padStart(2, '0')}`));
      const leases = new Map<string, { token: string; cursor: number }>();
      for (const id of ids) leases.set(id, await lease(store, newInstance(id, `${s.workflow}-${id}`)));
      const ends = ids.map((id) =>
        store.write(id, leases.get(id)!.token, {
          now: T + 50,
          entries: [journalEntry('last')],
          status: 'completed',
          output: 'done',
          release: { wakeAt: null, waits: [], signalCursor: leases.get(id)!.cursor },
        }),
      );
      const changed = await store.changeMany(ids, {
        kind: 'cancel',
        request: { reason: 'race', now: T + 60, terminate: false },
      });
      expect(await Promise.all(ends)).toEqual(ids.map(() => true));
      for (const id of ids) {
        const instance = await details(store, id);
        expect(instance.status, id).toBe('completed');
        expect(instance.cancelRequested, id).toBe(changed.includes(id));
        // Cancelled before its end (the end's write came last), never after it.
        expect(instance.updatedAt, id).toBe(T + 50);
      }
      expect(
        await store.changeMany(ids, { kind: 'cancel', request: { reason: 'late', now: T + 70, terminate: false } }),
      ).toEqual([]);
    });

    it("changeMany: the holders of leased instances hear of a page's cancels, terminates and pauses by name, once stored", async () => {
      const store = suite.store;
      if (!store.changeMany || !store.listen) return;
      const s = testScope();
      const leases = new Map<string, string>();
      for (const name of ['probe', 'c1', 'c2', 't', 'p', 'untouched'])
        leases.set(s.id(name), (await lease(store, newInstance(s.id(name), `${s.workflow}-${name}`))).token);
      await store.create(newInstance(s.id('free'), s.workflow));
      const named = new Set<string>();
      const stop = await store.listen(
        (id, kind) => {
          if (kind === 'cancel' && id !== undefined && id.startsWith(s.prefix)) named.add(id);
        },
        { needsWakeUps: () => false, held: () => leases.keys() },
      );
      try {
        // A store that names no single cancel need not name a page's.
        await store.requestCancel(s.id('probe'), { reason: null, now: T + 5, terminate: false });
        if (!(await waitFor(() => named.has(s.id('probe')), 1_000))) return;
        named.clear();
        const cancel = (terminate: boolean) => ({
          kind: 'cancel' as const,
          request: { reason: 'bulk', now: T + 10, terminate },
        });
        expect((await store.changeMany([s.id('c1'), s.id('c2'), s.id('free')], cancel(false))).sort()).toEqual(
          [s.id('c1'), s.id('c2'), s.id('free')].sort(),
        );
        expect(await store.changeMany([s.id('t')], cancel(true))).toEqual([s.id('t')]);
        expect(await store.changeMany([s.id('p')], { kind: 'pause', request: { reason: null, now: T + 10 } })).toEqual([
          s.id('p'),
        ]);
        const expected = [s.id('c1'), s.id('c2'), s.id('p'), s.id('t')];
        await waitFor(() => expected.every((id) => named.has(id)), 10_000);
        expect([...named].filter((id) => id !== s.id('free')).sort()).toEqual(expected);
        expect(await store.renew(s.id('p'), leases.get(s.id('p'))!, T + 60_000)).toMatchObject({ paused: true });
        expect(await store.renew(s.id('t'), leases.get(s.id('t'))!, T + 60_000)).toMatchObject({
          cancelRequested: true,
          terminateRequested: true,
        });
      } finally {
        await stop();
      }
    });

    it("changeManyInTransaction and the client's bulk actions with { transaction }: a rollback leaves every instance as it was, a commit changes them", async () => {
      const store = suite.store;
      if (!store.changeManyInTransaction || !suite.appTransaction) return;
      const s = testScope();
      const ids = ['a', 'b', 'c'].map((name) => s.id(name));
      for (const id of ids) await store.create(newInstance(id, s.workflow));
      const before = await Promise.all(ids.map((id) => details(store, id)));
      const cancel: WorkflowBulkChange = { kind: 'cancel', request: { reason: 'tx', now: T + 10, terminate: false } };
      const rolledBack = await suite.appTransaction();
      expect((await store.changeManyInTransaction(rolledBack.handle, ids, cancel)).sort()).toEqual([...ids].sort());
      await rolledBack.rollback();
      expect(await Promise.all(ids.map((id) => details(store, id)))).toEqual(before);

      const engine = engines.open({ workflows: [] });
      const filter = { idPrefix: s.prefix };
      const undone = await suite.appTransaction();
      expect(await engine.client.cancelMany(filter, { reason: 'tx', transaction: undone.handle })).toEqual({
        matched: 3,
        changed: 3,
      });
      expect(await engine.client.pauseMany(filter, { transaction: undone.handle })).toEqual({ matched: 3, changed: 3 });
      await undone.rollback();
      expect(await Promise.all(ids.map((id) => details(store, id)))).toEqual(before);

      const kept = await suite.appTransaction();
      expect(await engine.client.pauseMany(filter, { reason: 'kept', transaction: kept.handle })).toEqual({
        matched: 3,
        changed: 3,
      });
      await kept.commit();
      for (const id of ids) expect(await details(store, id)).toMatchObject({ status: 'paused', pauseReason: 'kept' });
      const resumed = await suite.appTransaction();
      expect(await engine.client.resumeMany(filter, { transaction: resumed.handle })).toEqual({
        matched: 3,
        changed: 3,
      });
      await resumed.commit();
      for (const id of ids) expect((await details(store, id)).status).toBe('pending');
    });

    it('cancelMany() stopped between two pages (a crash) runs again and cancels each instance once', async () => {
      if (!suite.store.changeMany) return;
      const s = testScope();
      const count = BULK_CHANGE_LIMIT + 20;
      const ids = Array.from({ length: count }, (_, n) => s.id(`i${String(n).padStart(4, '0')}`));
      for (let n = 0; n < count; n += 100)
        await Promise.all(ids.slice(n, n + 100).map((id) => suite.store.create(newInstance(id, s.workflow))));
      const changedBy = new Map<string, number>();
      let pages = 0;
      let crashAt: number | null = 2;
      const store = crashingStore(suite.store, async (call) => {
        pages++;
        if (pages === crashAt) throw new Error('the process died here');
        const changed = await call();
        for (const id of changed) changedBy.set(id, (changedBy.get(id) ?? 0) + 1);
        return changed;
      });
      const engine = engines.open({ workflows: [] }, store);
      await expect(engine.client.cancelMany({ idPrefix: s.prefix }, { reason: 'first' })).rejects.toThrow(
        'the process died here',
      );
      const afterCrash = await cancelledIds(suite.store, s);
      expect(afterCrash.length).toBe(BULK_CHANGE_LIMIT);
      crashAt = null;
      expect(await engine.client.cancelMany({ idPrefix: s.prefix }, { reason: 'second' })).toEqual({
        matched: count,
        changed: count - afterCrash.length,
      });
      expect(changedBy.size).toBe(count);
      expect([...changedBy.values()].every((times) => times === 1)).toBe(true);
      const reasons = await Promise.all(ids.map(async (id) => (await details(suite.store, id)).cancelReason));
      expect(reasons.filter((reason) => reason === 'first').length).toBe(afterCrash.length);
      expect(reasons.filter((reason) => reason === 'second').length).toBe(count - afterCrash.length);
    }, 60_000);
  });
}

/** `store` with its `changeMany()` (when it has one) passed through `around`. */
function crashingStore(
  store: WorkflowStore,
  around: (call: () => Promise<string[]>) => Promise<string[]>,
): WorkflowStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'changeMany' && target.changeMany)
        return (ids: readonly string[], change: WorkflowBulkChange) => around(() => target.changeMany!(ids, change));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function cancelledIds(store: WorkflowStore, s: TestScope): Promise<string[]> {
  const rows = await store.list({ idPrefix: s.prefix, limit: 1000, offset: 0 });
  return rows.filter((row) => row.cancelRequested).map((row) => row.id);
}
