import { BASE_TIME as T, journalEntry, lease, newInstance, newSignal, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * `untakenSignals` (optional): the newest signals no journal entry took, newest first, with name,
 * key and time, engine signals left out; what an operator reads to find a misspelt signal name.
 */
export function untakenSignalsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('untakenSignals', () => {
    it('untakenSignals: lists the signals no journal entry took, newest first, up to limit, without engine signals', async () => {
      const store = suite.store;
      if (!store.untakenSignals) return; // optional: this store lists none
      const s = testScope();
      const sent = async (name: string, key: string | null, at: number) =>
        (await store.signal(newSignal(s.signal(name), { key, now: at }))).id;
      const misspelt = await sent('shipment.deliverd', 'order-1', T + 1);
      const taken = await sent('shipment.delivered', 'order-1', T + 2);
      await store.signal(newSignal('$child-ended', { key: s.id('child'), now: T + 3 }));
      const early = await sent('approval', null, T + 4);
      const { token } = await lease(store, newInstance(s.id('waiter'), s.workflow));
      const wrote = await store.write(s.id('waiter'), token, {
        now: T + 5,
        entries: [journalEntry('delivery', { kind: 'signal', value: { at: 'noon' }, signalId: taken })],
      });
      expect(wrote).toBe(true);

      // Other tests' signals may be newer or in between: look at this test's.
      const ours = async (limit: number) =>
        (await store.untakenSignals!({ limit })).filter(
          (signal) => signal.name.startsWith(s.prefix) || signal.name.startsWith('$'),
        );
      expect(await ours(100)).toEqual([
        { id: early, name: s.signal('approval'), key: null, createdAt: T + 4 },
        { id: misspelt, name: s.signal('shipment.deliverd'), key: 'order-1', createdAt: T + 1 },
      ]);
      const first = await store.untakenSignals({ limit: 1 });
      expect(first).toHaveLength(1);
      expect(first[0]!.id).toBeGreaterThanOrEqual(early);
    });
  });
}
