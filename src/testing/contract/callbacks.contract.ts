import { createHash, randomBytes } from 'node:crypto';
import { FINISHED_STATUSES } from '../../storage/workflow-instance.js';
import type { NewWorkflowCallback, WorkflowStore } from '../../storage/workflow-store.js';
import { BASE_TIME as T, newInstance, range, settle, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

type CallbackStore = Required<
  Pick<WorkflowStore, 'createCallback' | 'getCallback' | 'settleCallback' | 'expireCallback'>
>;

function callbackStore(store: WorkflowStore): CallbackStore {
  if (!store.createCallback || !store.getCallback || !store.settleCallback || !store.expireCallback) {
    throw new Error('The store has no callbacks (createCallback, getCallback, settleCallback, expireCallback).');
  }
  return store as CallbackStore;
}

function hash(): string {
  return createHash('sha256').update(randomBytes(16)).digest('hex');
}

function callback(id: string, name: string, overrides: Partial<NewWorkflowCallback> = {}): NewWorkflowCallback {
  return { id, name, tokenHash: hash(), expiresAt: null, now: T, ...overrides };
}

/**
 * `createCallback` / `settleCallback` / `expireCallback`: a token settles once, a completion and the
 * timeout race on one conditional update, and callbacks go with their instance.
 */
export function callbacksContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('callbacks', () => {
    it('callbacks: a created callback is open; a completion settles it with its payload, once', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = callbackStore(suite.store);
      const cb = callback(s.id('a'), 'approval', { expiresAt: T + 1000 });
      expect(await store.createCallback(cb)).toBe(true);
      expect(await store.getCallback(s.id('a'), 'approval')).toEqual({
        id: s.id('a'),
        name: 'approval',
        state: 'open',
        payload: null,
        expiresAt: T + 1000,
        createdAt: T,
        settledAt: null,
      });
      expect(
        await store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: { ok: 1 }, now: T + 5 }),
      ).toEqual({ outcome: 'settled', id: s.id('a'), name: 'approval' });
      expect(
        await store.settleCallback({
          tokenHash: cb.tokenHash,
          state: 'failed',
          payload: { name: 'Error' },
          now: T + 6,
        }),
      ).toEqual({ outcome: 'used' });
      expect(await store.expireCallback(s.id('a'), 'approval', T + 2000)).toBe(false);
      expect(await store.getCallback(s.id('a'), 'approval')).toMatchObject({
        state: 'completed',
        payload: { ok: 1 },
        settledAt: T + 5,
      });
      expect(await store.settleCallback({ tokenHash: hash(), state: 'completed', payload: null, now: T })).toEqual({
        outcome: 'unknown',
      });
      expect(await store.getCallback(s.id('a'), 'other')).toBeNull();
    });

    it('callbacks: from expiresAt on a completion is refused as expired, and the timeout lands', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = callbackStore(suite.store);
      const cb = callback(s.id('a'), 'approval', { expiresAt: T + 1000 });
      await store.createCallback(cb);
      expect(
        await store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: 1, now: T + 1000 }),
      ).toEqual({
        outcome: 'expired',
      });
      expect(await store.expireCallback(s.id('a'), 'approval', T + 1000)).toBe(true);
      expect(await store.expireCallback(s.id('a'), 'approval', T + 1001)).toBe(false);
      expect(
        await store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: 1, now: T + 10 }),
      ).toEqual({
        outcome: 'used',
      });
      expect(await store.getCallback(s.id('a'), 'approval')).toMatchObject({
        state: 'expired',
        payload: null,
        settledAt: T + 1000,
      });
    });

    it('callbacks: creating it again while open replaces the token; once settled it is kept; an unknown instance stores nothing', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = callbackStore(suite.store);
      const first = callback(s.id('a'), 'approval');
      const second = callback(s.id('a'), 'approval', { expiresAt: T + 50 });
      await store.createCallback(first);
      await store.createCallback(second);
      expect(
        await store.settleCallback({ tokenHash: first.tokenHash, state: 'completed', payload: 1, now: T }),
      ).toEqual({
        outcome: 'unknown',
      });
      expect(await store.getCallback(s.id('a'), 'approval')).toMatchObject({ state: 'open', expiresAt: T + 50 });
      await store.settleCallback({
        tokenHash: second.tokenHash,
        state: 'failed',
        payload: { name: 'Error', message: 'no' },
        now: T + 1,
      });
      await store.createCallback(callback(s.id('a'), 'approval'));
      expect(await store.getCallback(s.id('a'), 'approval')).toMatchObject({
        state: 'failed',
        payload: { name: 'Error', message: 'no' },
      });
      expect(await store.createCallback(callback(s.id('missing'), 'approval'))).toBe(false);
      await suite.store.create(newInstance(s.id('missing'), s.workflow));
      expect(await store.getCallback(s.id('missing'), 'approval')).toBeNull();
    });

    it('callbacks: of concurrent completions of one token exactly one settles, and the rest see it used', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = callbackStore(suite.store);
      const cb = callback(s.id('a'), 'approval');
      await store.createCallback(cb);
      const results = await Promise.all(
        range(8).map((i) =>
          store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: i, now: T + 1 }),
        ),
      );
      const winners = results.flatMap((r, i) => (r.outcome === 'settled' ? [i] : []));
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'used')).toHaveLength(7);
      expect((await store.getCallback(s.id('a'), 'approval'))!.payload).toBe(winners[0]);
    });

    it('callbacks: a completion racing the timeout: exactly one of them lands, and the state says which', async () => {
      const s = testScope();
      const store = callbackStore(suite.store);
      for (const i of range(6)) {
        const id = s.id(`race-${i}`);
        await suite.store.create(newInstance(id, s.workflow));
        const cb = callback(id, 'approval', { expiresAt: T + 1000 });
        await store.createCallback(cb);
        const [settled, expired] = await Promise.all([
          store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: 'yes', now: T + 999 }),
          store.expireCallback(id, 'approval', T + 1000),
        ]);
        expect(settled.outcome === 'settled').toBe(!expired);
        expect((await store.getCallback(id, 'approval'))!.state).toBe(expired ? 'expired' : 'completed');
      }
    });

    it("callbacks: delete() takes an instance's callbacks with it, so its token is unknown", async () => {
      const s = testScope();
      await settle(suite.store, newInstance(s.id('a'), s.workflow), 'completed');
      const store = callbackStore(suite.store);
      const cb = callback(s.id('a'), 'approval');
      await store.createCallback(cb);
      expect(await suite.store.delete(s.id('a'), [...FINISHED_STATUSES])).toBe(true);
      expect(await store.settleCallback({ tokenHash: cb.tokenHash, state: 'completed', payload: 1, now: T })).toEqual({
        outcome: 'unknown',
      });
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      expect(await store.getCallback(s.id('a'), 'approval')).toBeNull();
    });
  });
}
