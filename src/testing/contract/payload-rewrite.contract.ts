import type { WorkflowStore } from '../../storage/workflow-store.js';
import {
  BASE_TIME as T,
  details,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

type Rewritable = Required<Pick<WorkflowStore, 'rewritePayloads' | 'listSignals' | 'rewriteSignalPayload'>> &
  WorkflowStore;

function rewritable(store: WorkflowStore): Rewritable {
  if (!store.rewritePayloads || !store.listSignals || !store.rewriteSignalPayload) {
    throw new Error(
      `${store.constructor.name} lacks rewritePayloads(), listSignals() or rewriteSignalPayload(), which re-encryption needs. ` +
        'Implement them, or run the contract with { reencryption: false } for a store that will never be re-encrypted.',
    );
  }
  return store as Rewritable;
}

/**
 * Re-encryption's operations: every payload replaced only while it still holds what was read
 * (compare-and-set), nothing else changed, signals paged in id order.
 */
export function payloadRewriteContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('payload rewrite (re-encryption)', () => {
    it('rewritePayloads: replaces each payload still holding its `from`, and nothing else of the instance', async () => {
      const store = rewritable(suite.store);
      const s = testScope();
      const { token } = await lease(store, newInstance(s.id('a'), s.workflow, { input: { card: 'old-in' } }));
      await store.requestCancel(s.id('a'), { reason: 'old-reason', now: T + 1, terminate: false });
      const error = { name: 'PaymentError', message: 'old-message', step: 'charge' };
      expect(
        await store.write(s.id('a'), token, {
          now: T + 2,
          entries: [journalEntry('first', { value: 'old-1' }), journalEntry('second', { value: { v: 'old-2' } })],
          error,
          customStatus: { stage: 'old-status' },
        }),
      ).toBe(true);
      const before = await details(store, s.id('a'));
      const [first, second] = before.journal!;

      const count = await store.rewritePayloads(s.id('a'), {
        input: { from: before.input, to: 'new-in' },
        error: { from: before.error, to: { ...error, message: 'new-message' } },
        customStatus: { from: before.customStatus, to: 'new-status' },
        cancelReason: { from: before.cancelReason, to: 'new-reason' },
        entries: [{ name: 'first', from: first!, to: { ...first!, value: 'new-1' } }],
      });
      expect(count).toBe(5);
      const after = await details(store, s.id('a'));
      expect(after).toEqual({
        ...before,
        input: 'new-in',
        error: { ...error, message: 'new-message' },
        customStatus: 'new-status',
        cancelReason: 'new-reason',
        journal: [{ ...first!, value: 'new-1' }, second],
      });
      // The lease still stands: its holder writes on as before.
      expect(await store.write(s.id('a'), token, { now: T + 3, entries: [journalEntry('third')] })).toBe(true);
    });

    it('rewritePayloads: a payload changed since it was read is left as the later write made it', async () => {
      const store = rewritable(suite.store);
      const s = testScope();
      const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
      await store.write(s.id('a'), token, {
        now: T + 1,
        entries: [journalEntry('step', { value: 'v1' })],
        customStatus: 's1',
      });
      const read = await details(store, s.id('a'));
      // A worker writes after the read: its values win over the rewrite of what was read.
      await store.write(s.id('a'), token, {
        now: T + 2,
        entries: [journalEntry('step', { value: 'v2' })],
        customStatus: 's2',
      });
      const count = await store.rewritePayloads(s.id('a'), {
        input: { from: read.input, to: 'in-rewritten' },
        customStatus: { from: read.customStatus, to: 's1-rewritten' },
        entries: [{ name: 'step', from: read.journal![0]!, to: { ...read.journal![0]!, value: 'v1-rewritten' } }],
      });
      expect(count).toBe(1);
      const after = await details(store, s.id('a'));
      expect(after).toMatchObject({ input: 'in-rewritten', customStatus: 's2' });
      expect(after.journal![0]!.value).toBe('v2');
    });

    it('rewritePayloads: an unknown id or entry name replaces nothing and creates nothing', async () => {
      const store = rewritable(suite.store);
      const s = testScope();
      expect(await store.rewritePayloads(s.id('missing'), { input: { from: null, to: 'x' } })).toBe(0);
      await store.create(newInstance(s.id('a'), s.workflow));
      const entry = journalEntry('ghost');
      expect(
        await store.rewritePayloads(s.id('a'), {
          entries: [{ name: 'ghost', from: entry, to: { ...entry, value: 1 } }],
        }),
      ).toBe(0);
      expect((await details(store, s.id('a'))).journal).toEqual([]);
      expect(await store.get(s.id('missing'))).toBeNull();
    });

    it('listSignals pages every signal in id order; rewriteSignalPayload replaces a payload still holding its `from`', async () => {
      const store = rewritable(suite.store);
      const s = testScope();
      const start = await lastSignalId(store);
      const a = await store.signal(newSignal(s.signal('a'), { payload: { p: 'a' } }));
      const b = await store.signal(newSignal(s.signal('b'), { key: 'k', payload: ['b'] }));
      const c = await store.signal(newSignal(s.signal('c'), { payload: 'c' }));
      const page1 = await store.listSignals({ afterId: start, limit: 2 });
      expect(page1.map((r) => r.id)).toEqual([a.id, b.id]);
      expect(page1[1]).toMatchObject({ name: s.signal('b'), key: 'k', payload: ['b'], createdAt: T });
      const page2 = (await store.listSignals({ afterId: b.id, limit: 10 })).filter((r) => r.id <= c.id);
      expect(page2.map((r) => r.id)).toEqual([c.id]);

      expect(await store.rewriteSignalPayload(b.id, { from: ['b'], to: 'b-new' })).toBe(true);
      expect(await store.rewriteSignalPayload(b.id, { from: ['b'], to: 'again' })).toBe(false);
      expect(await store.rewriteSignalPayload(c.id + 1_000_000, { from: 'c', to: 'x' })).toBe(false);
      const read = await store.signals({ name: s.signal('b'), key: 'k', afterId: 0, upToId: b.id });
      expect(read).toEqual([{ id: b.id, name: s.signal('b'), key: 'k', payload: 'b-new', createdAt: T }]);
    });
  });
}
