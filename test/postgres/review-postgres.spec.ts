import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { PostgresListener } from '../../src/postgres/postgres-listener.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import type { NewWorkflowInstance } from '../../src/storage/workflow-store.js';
import { createPool, requirePostgres, usePostgresStore } from '../support/postgres.js';

// Review of the PostgreSQL store: each test here failed before its fix.
const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore review');

const instance = (id: string, workflow = 'review.flow'): NewWorkflowInstance => ({ id, workflow, version: 1, input: { id }, deadline: null, now: T });
const entry = (name: string, value: unknown = name) => ({
  name,
  kind: 'step' as const,
  state: 'completed' as const,
  value,
  attempts: 1,
  createdAt: T,
  updatedAt: T,
});

describe('PostgresListener', () => {
  it('keeps listening for a listener added while the last one leaves during a reconnection', async () => {
    let notify: () => void = () => undefined;
    let fail: (error: Error) => void = () => undefined;
    const connects: Array<() => void> = [];
    let open = 0;
    const executor = {
      query: () => Promise.reject(new Error('unused')),
      transaction: () => Promise.reject(new Error('unused')),
      listen: (_channel: string, onNotify: () => void, onError?: (error: Error) => void) =>
        new Promise<() => Promise<void>>((resolve) => {
          notify = onNotify;
          // A failed connection is gone (fromPg destroys it): its unsubscribe is never called.
          fail = (error) => {
            open--;
            onError?.(error);
          };
          connects.push(() => {
            open++;
            resolve(async () => {
              open--;
            });
          });
        }),
    } as unknown as SqlExecutor;
    const listener = new PostgresListener(executor, 'ch', { minDelay: 1, maxDelay: 1 });
    const first = vi.fn();
    const adding = listener.add(first);
    connects.shift()!();
    const removeFirst = await adding;
    expect(listener.connected).toBe(true);

    // The connection drops; the reconnection starts and hangs in connect().
    fail(new Error('gone'));
    await vi.waitFor(() => expect(connects).toHaveLength(1));
    // The last listener leaves while it reconnects, and another one joins meanwhile.
    const removing = removeFirst();
    const second = vi.fn();
    const addingSecond = listener.add(second);
    connects.shift()!();
    await removing;
    await addingSecond;

    expect(listener.connected).toBe(true);
    expect(open).toBe(1);
    notify();
    expect(second).toHaveBeenCalled();
    await listener.close();
    expect(open).toBe(0);
  });
});

describe.skipIf(!available)('PostgresWorkflowStore review', () => {
  const fixture = usePostgresStore('review', { beforeAll, afterAll }, 6);

  it('creates once when one create object is passed twice in one batch', async () => {
    const same = instance('same-object');
    const results = await Promise.all([fixture.store.create(same), fixture.store.create(same), fixture.store.create(instance('other-object'))]);
    expect(results.map((r) => r.created)).toEqual([true, false, true]);
  });

  it('does not deadlock when two processes batch-create overlapping ids in opposite orders', async () => {
    const other = createPool({ max: 2 });
    try {
      const second = new PostgresWorkflowStore({ executor: fromPg(other), schema: fixture.schema });
      for (let round = 0; round < 3; round++) {
        const ids = Array.from({ length: 400 }, (_, i) => `dl-${round}-${String(i).padStart(4, '0')}`);
        const [a, b] = await Promise.all([
          Promise.all(ids.map((id) => fixture.store.create(instance(id)))),
          Promise.all([...ids].reverse().map((id) => second.create(instance(id)))),
        ]);
        const createdA = new Set(a.filter((r) => r.created).map((r) => r.instance.id));
        const createdB = b.filter((r) => r.created).map((r) => r.instance.id);
        expect(createdA.size + createdB.length).toBe(ids.length);
        for (const id of createdB) expect(createdA.has(id)).toBe(false);
      }
    } finally {
      await other.end();
    }
  });

  it('names prepared statements so two copies of the module share a connection without colliding', async () => {
    // ESM and CJS builds loaded together (or two versions of the package) each have their own
    // statement names, while the application's pool (and its connections' statement caches) is shared.
    const single = createPool({ max: 1 });
    try {
      vi.resetModules();
      const copyA = await import('../../src/postgres/from-pg.js');
      vi.resetModules();
      const copyB = await import('../../src/postgres/from-pg.js');
      expect(copyA.fromPg).not.toBe(copyB.fromPg);
      const a = copyA.fromPg(single);
      const b = copyB.fromPg(single);
      expect((await a.query('SELECT $1::int AS a', [1])).rows).toEqual([{ a: 1 }]);
      expect((await b.query('SELECT $1::text AS b', ['x'])).rows).toEqual([{ b: 'x' }]);
      expect((await a.query('SELECT $1::int AS a', [2])).rows).toEqual([{ a: 2 }]);
    } finally {
      await single.end();
    }
  });

  it('keeps the order of one instance\'s writes when a batched write and a suspension are made back to back', async () => {
    await fixture.store.create(instance('mixed-1', 'review.mixed'));
    const token = randomUUID();
    const claim = await fixture.store.claim({ owner: 'me', token, now: T, leaseUntil: T + 60_000, limit: 1, workflows: [{ name: 'review.mixed', version: 1 }] });
    expect(claim.instances).toHaveLength(1);
    // Another session holds the row, so the first write waits in the database, and the next batched
    // write waits behind it in the fixture.store.
    const blocker = await fixture.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${fixture.schema}".instances WHERE id = $1 FOR UPDATE`, ['mixed-1']);
      const writes = [
        fixture.store.write('mixed-1', token, { now: T, entries: [entry('one')] }),
        fixture.store.write('mixed-1', token, { now: T, entries: [entry('two')] }),
        fixture.store.write('mixed-1', token, {
          now: T,
          entries: [entry('three')],
          status: 'suspended',
          release: { wakeAt: null, waits: [{ name: 'go', key: null }], signalCursor: claim.lastSignalId },
        }),
      ];
      await new Promise((resolve) => setTimeout(resolve, 200));
      await blocker.query('COMMIT');
      expect(await Promise.all(writes)).toEqual([true, true, true]);
    } finally {
      blocker.release();
    }
    const stored = await fixture.store.get('mixed-1', { journal: true });
    expect(stored!.journal!.map((e) => e.name)).toEqual(['one', 'two', 'three']);
    expect(stored!.status).toBe('suspended');
    expect(stored!.waits).toEqual([{ name: 'go', key: null }]);
  });
});
