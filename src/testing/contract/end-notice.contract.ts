import { BASE_TIME as T, lease, newInstance, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `requestEndNotice` (optional): asked while unfinished, an instance's end reaches `listenForEnds()`. */
export function endNoticeContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('requestEndNotice', () => {
    it('requestEndNotice: true while the instance is unfinished (pending or leased), false once it ended or for an unknown id', async () => {
      const store = suite.store;
      if (!store.requestEndNotice) return; // optional: this store hears every end without asking
      const s = testScope();
      expect(await store.requestEndNotice(s.id('unknown'), T)).toBe(false);
      await store.create(newInstance(s.id('pending'), s.workflow));
      expect(await store.requestEndNotice(s.id('pending'), T)).toBe(true);
      const { token, cursor } = await lease(store, newInstance(s.id('leased'), `${s.workflow}-leased`));
      expect(await store.requestEndNotice(s.id('leased'), T)).toBe(true);
      await store.write(s.id('leased'), token, {
        now: T + 1,
        entries: [],
        status: 'failed',
        error: { name: 'Error', message: 'boom' },
        release: { wakeAt: null, waits: [], signalCursor: cursor },
      });
      expect(await store.requestEndNotice(s.id('leased'), T)).toBe(false);
    });

    it('requestEndNotice: racing the end, either the end reaches listenForEnds() or the ask answers false', async () => {
      const store = suite.store;
      if (!store.requestEndNotice || !store.listenForEnds) return;
      const s = testScope();
      const ids = Array.from({ length: 30 }, (_, k) => s.id(`i${k}`));
      const leases = [];
      for (const id of ids) leases.push({ id, ...(await lease(store, newInstance(id, `${s.workflow}-${id}`))) });
      const heard = new Set<string | null>();
      const stop = await store.listenForEnds((id) => heard.add(id));
      try {
        // Each ask is sent together with its instance's end: the store orders them, either way.
        const asked = await Promise.all(
          leases.map(async ({ id, token, cursor }) => {
            const [answer] = await Promise.all([
              store.requestEndNotice!(id, T),
              store.write(id, token, {
                now: T + 1,
                entries: [],
                status: 'completed',
                output: id,
                release: { wakeAt: null, waits: [], signalCursor: cursor },
              }),
            ]);
            return answer ? id : null;
          }),
        );
        const expected = asked.filter((id): id is string => id !== null);
        for (let waited = 0; !expected.every((id) => heard.has(id)) && waited < 10_000; waited += 20) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(expected.filter((id) => !heard.has(id))).toEqual([]);
      } finally {
        await stop();
      }
    });
  });
}
