import {
  BASE_TIME as T,
  claimRequest,
  details,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  range,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `signal` and `signals`: ids, deduplication, the waiters a signal wakes and the race with a suspending write. */
export function signalsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('signals', () => {
    it('signal: ids increase, starting at 1 on an empty store', async () => {
      const s = testScope();
      const before = await lastSignalId(suite.store);
      const first = await suite.store.signal(newSignal(s.signal('n')));
      const second = await suite.store.signal(newSignal(s.signal('n')));
      const third = await suite.store.signal(newSignal(s.signal('m'), { key: 'k' }));
      if (before === 0) expect(first.id).toBe(1);
      expect(first.id).toBeGreaterThan(before);
      expect(second.id).toBeGreaterThan(first.id);
      expect(third.id).toBeGreaterThan(second.id);
      expect(first).toEqual({ id: first.id, woken: 0, created: true, key: null });
      expect(third.key).toBe('k');
      expect(await lastSignalId(suite.store)).toBe(third.id);
    });

    it('signals: returns the signals with the name and exactly the key, afterId < id <= upToId, in id order', async () => {
      const s = testScope();
      const [n, m] = [s.signal('n'), s.signal('m')];
      const sent = [];
      for (const [i, [name, key]] of (
        [
          [n, 'k'],
          [n, null],
          [n, 'k'],
          [m, 'k'],
          [n, 'K'],
          [n, 'k'],
          [n, null],
        ] as const
      ).entries()) {
        sent.push({ ...(await suite.store.signal(newSignal(name, { key, payload: { i }, now: T + i }))), name, i });
      }
      const query = async (name: string, key: string | null, afterId = 0, upToId = Number.MAX_SAFE_INTEGER) =>
        (await suite.store.signals({ name, key, afterId, upToId })).map((r) => (r.payload as { i: number }).i);
      expect(await query(n, 'k')).toEqual([0, 2, 5]);
      expect(await query(n, null)).toEqual([1, 6]);
      expect(await query(n, 'K')).toEqual([4]);
      expect(await query(m, 'k')).toEqual([3]);
      expect(await query(m, null)).toEqual([]);
      expect(await query(n, 'k', sent[0]!.id, sent[5]!.id)).toEqual([2, 5]);
      expect(await query(n, 'k', sent[0]!.id, sent[5]!.id - 1)).toEqual([2]);
      expect(await query(n, 'k', sent[2]!.id, sent[2]!.id)).toEqual([]);
      const [record] = await suite.store.signals({ name: n, key: 'K', afterId: 0, upToId: Number.MAX_SAFE_INTEGER });
      expect(record).toEqual({ id: sent[4]!.id, name: n, key: 'K', payload: { i: 4 }, createdAt: T + 4 });
    });

    it('signal: makes due now every suspended instance waiting for its name and exact key, and counts them', async () => {
      const s = testScope();
      const [n, m] = [s.signal('n'), s.signal('m')];
      const park = (id: string, wakeAt: number | null, waits: Array<{ name: string; key: string | null }>) =>
        settle(suite.store, newInstance(s.id(id), `${s.workflow}-${id}`), 'suspended', { wakeAt, waits });
      await park('a', null, [
        { name: m, key: null },
        { name: n, key: 'k' },
      ]);
      await park('b', T + 9_999, [{ name: n, key: 'k' }]);
      await park('other-key', null, [{ name: n, key: 'K' }]);
      await park('null-key', null, [{ name: n, key: null }]);
      await park('other-name', null, [{ name: m, key: 'k' }]);
      const untouched = await Promise.all(
        ['other-key', 'null-key', 'other-name'].map((id) => snapshot(suite.store, s.id(id))),
      );
      const result = await suite.store.signal(newSignal(n, { key: 'k', now: T + 100 }));
      expect(result).toMatchObject({ woken: 2, created: true, key: 'k' });
      for (const id of ['a', 'b']) expect(await details(suite.store, s.id(id))).toMatchObject({ wakeAt: T + 100 });
      expect(
        await Promise.all(['other-key', 'null-key', 'other-name'].map((id) => snapshot(suite.store, s.id(id)))),
      ).toEqual(untouched);
      expect((await suite.store.signal(newSignal(n, { key: null, now: T + 200 }))).woken).toBe(1);
      expect((await details(suite.store, s.id('null-key'))).wakeAt).toBe(T + 200);
    });

    it('signal: keeps an earlier wakeAt of a waiter that is already due', async () => {
      const s = testScope();
      const n = s.signal('n');
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'suspended', {
        wakeAt: T + 50,
        waits: [{ name: n, key: null }],
      });
      await suite.store.signal(newSignal(n, { now: T + 100 }));
      expect((await details(suite.store, s.id('a'))).wakeAt).toBe(T + 50);
    });

    it('signal: wakes only suspended instances', async () => {
      const s = testScope();
      const n = s.signal('n');
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'suspended', {
        wakeAt: T + 10,
        waits: [{ name: n, key: null }],
      });
      await suite.store.claim(claimRequest(s.workflow, { now: T + 10 }));
      await settle(suite.store, newInstance(s.id('done'), `${s.workflow}-d`), 'completed');
      const before = await Promise.all([snapshot(suite.store, s.id('a')), snapshot(suite.store, s.id('done'))]);
      expect((await suite.store.signal(newSignal(n, { now: T + 20 }))).woken).toBe(0);
      expect(await Promise.all([snapshot(suite.store, s.id('a')), snapshot(suite.store, s.id('done'))])).toEqual(
        before,
      );
    });

    it('signal: a name, key or id holding a lone surrogate (which no SQL store keeps: two keys would be one) is refused before anything is stored', async () => {
      const s = testScope();
      const n = s.signal('n');
      const before = await lastSignalId(suite.store);
      for (const signal of [
        newSignal(`${n}\ud800`, { payload: 1 }),
        newSignal(n, { key: 'k\udc00' }),
        newSignal(n, { key: 'k', dedupeId: 'd\ud83d' }),
      ]) {
        await expect(suite.store.signal(signal)).rejects.toThrow(/surrogate/);
      }
      expect(await lastSignalId(suite.store)).toBe(before);
      expect(
        await suite.store.signals({ name: n, key: 'k\ufffd', afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
      ).toEqual([]);
    });

    it("signal: a payload holding a NUL character (which PostgreSQL can't read as text) is refused before anything is stored", async () => {
      const s = testScope();
      const before = await lastSignalId(suite.store);
      await expect(suite.store.signal(newSignal(s.signal('n'), { payload: { text: 'a\u0000b' } }))).rejects.toThrow(
        /NUL/,
      );
      expect(await lastSignalId(suite.store)).toBe(before);
    });

    it('signal: a repeated (name, dedupeId) returns the earlier id and key, created false, and stores and wakes nothing', async () => {
      const s = testScope();
      const n = s.signal('n');
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'suspended', { waits: [{ name: n, key: 'k2' }] });
      const first = await suite.store.signal(newSignal(n, { key: 'k1', dedupeId: 'd1' }));
      const before = await snapshot(suite.store, s.id('a'));
      const again = await suite.store.signal(newSignal(n, { key: 'k2', dedupeId: 'd1', now: T + 10 }));
      expect(again).toEqual({ id: first.id, woken: 0, created: false, key: 'k1' });
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
      expect(await suite.store.signals({ name: n, key: 'k2', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual(
        [],
      );
      const otherName = await suite.store.signal(newSignal(s.signal('m'), { key: 'k1', dedupeId: 'd1' }));
      expect(otherName.created).toBe(true);
      const plain = await Promise.all([suite.store.signal(newSignal(n)), suite.store.signal(newSignal(n))]);
      expect(plain.map((r) => r.created)).toEqual([true, true]);
      expect(plain[0]!.id).not.toBe(plain[1]!.id);
    });

    it('signal: concurrent signals get unique ids, and signals() returns every one in id order', async () => {
      const s = testScope();
      const n = s.signal('n');
      const results = await Promise.all(
        range(20).map((i) => suite.store.signal(newSignal(n, { key: 'k', payload: { i } }))),
      );
      const ids = results.map((r) => r.id);
      expect(new Set(ids).size).toBe(20);
      const records = await suite.store.signals({ name: n, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER });
      expect(records.map((r) => r.id)).toEqual([...ids].sort((a, b) => a - b));
      for (const record of records) expect(record.payload).toEqual({ i: ids.indexOf(record.id) });
      expect(await lastSignalId(suite.store)).toBe(Math.max(...ids));
    });

    it('signal: of 10 concurrent signals with one dedupeId exactly one is created, and all return its id', async () => {
      const s = testScope();
      const n = s.signal('n');
      const results = await Promise.all(
        range(10).map((i) => suite.store.signal(newSignal(n, { key: 'k', dedupeId: 'once', payload: { i } }))),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      expect(
        await suite.store.signals({ name: n, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
      ).toHaveLength(1);
    });

    it('signal: a signal racing a suspension that registers a matching wait always leaves the instance due (50 rounds)', async () => {
      const s = testScope();
      for (const round of range(50)) {
        const id = s.id(`r${round}`);
        const name = s.signal(`r${round}`);
        const { token, cursor } = await lease(suite.store, newInstance(id, `${s.workflow}-${round}`));
        const send = () => suite.store.signal(newSignal(name, { key: 'k', now: T + 10 }));
        const suspend = () =>
          suite.store.write(id, token, {
            now: T + 10,
            entries: [journalEntry('wait', { kind: 'signal', state: 'waiting', signal: { name, key: 'k' } })],
            status: 'suspended',
            release: { wakeAt: null, waits: [{ name, key: 'k' }], signalCursor: cursor },
          });
        // Both orders of starting them, so a store that yields mid-call is caught either way.
        const [sent, wrote] =
          round % 2 === 0
            ? await Promise.all([send(), suspend()])
            : await Promise.all([suspend(), send()]).then(([w, r]) => [r, w] as const);
        expect(wrote).toBe(true);
        expect(sent.created).toBe(true);
        const { wakeAt } = await details(suite.store, id);
        expect(wakeAt, `round ${round}`).not.toBeNull();
        expect(wakeAt!).toBeLessThanOrEqual(T + 10);
      }
    });
  });
}
