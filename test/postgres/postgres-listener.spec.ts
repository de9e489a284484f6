import { describe, expect, it, vi } from 'vitest';
import { fromPg } from '../../src/postgres/from-pg.js';
import type { PgNotificationLike, PgPoolClientLike, PgPoolLike } from '../../src/postgres/pg-like.js';
import { PostgresListener } from '../../src/postgres/postgres-listener.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

// The LISTEN connection behind the PostgreSQL store's wake-ups, driven through a scripted executor
// (no server needed): reconnections must never leave a listener unconnected.

describe('PostgresListener', () => {
  it("names each id of a bulk action's cancels:[ids] notice as a cancel, and reads a malformed one as work that may be due", async () => {
    let notify: (payload: string) => void = () => undefined;
    const executor = {
      query: () => Promise.reject(new Error('unused')),
      transaction: () => Promise.reject(new Error('unused')),
      listen: (_channel: string, onNotify: (payload: string) => void) => {
        notify = onNotify;
        return Promise.resolve(async () => undefined);
      },
    } as unknown as SqlExecutor;
    const listener = new PostgresListener(executor, 'ch');
    const heard = vi.fn();
    await listener.addWakeUps(heard);
    notify('cancels:["a","b:c"]');
    expect(heard.mock.calls).toEqual([
      ['a', 'cancel'],
      ['b:c', 'cancel'],
    ]);
    heard.mockClear();
    notify('cancels:["a",');
    notify('cancels:[1]');
    notify('cancel:x');
    expect(heard.mock.calls).toEqual([[], [], ['x', 'cancel']]);
    await listener.close();
  });

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

  it('with a linger, keeps the subscription that long past the last listener, and a listener coming meanwhile keeps it on', async () => {
    vi.useFakeTimers();
    try {
      let subscribed = 0;
      let unsubscribed = 0;
      const executor = {
        query: () => Promise.reject(new Error('unused')),
        transaction: () => Promise.reject(new Error('unused')),
        listen: async () => {
          subscribed++;
          return async () => {
            unsubscribed++;
          };
        },
      } as unknown as SqlExecutor;
      const listener = new PostgresListener(executor, 'ch', undefined, 1_000);
      const remove = await listener.add(() => undefined);
      // The removal returns without waiting for an UNLISTEN.
      await remove();
      expect(listener.connected).toBe(true);
      await vi.advanceTimersByTimeAsync(999);
      const again = await listener.add(() => undefined);
      expect(subscribed).toBe(1);
      await vi.advanceTimersByTimeAsync(5_000);
      expect([listener.connected, unsubscribed]).toEqual([true, 0]);
      await again();
      await vi.advanceTimersByTimeAsync(1_000);
      expect([listener.connected, subscribed, unsubscribed]).toEqual([false, 1, 1]);
      await listener.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("reconnects a subscription whose shared connection fails before its listen() has come back (another channel's LISTEN failed)", async () => {
    // fromPg's listen() on a scripted pool: the wake-ups' and the ends' LISTEN go out together on
    // the one shared client; the server answers the first and fails the second in the same reply
    // (a backend terminated between the two). The shared client is then over, and the wake-up
    // subscription hears onError before its listen() has resolved to the store's listener.
    const clients: Array<{
      queries: string[];
      answer: (sql: string, error?: Error) => void;
      notify: (message: PgNotificationLike) => void;
    }> = [];
    const pool: PgPoolLike = {
      query: () => Promise.reject(new Error('unused')),
      connect: async () => {
        const pending = new Map<string, { resolve: () => void; reject: (error: Error) => void }>();
        const handlers: Record<string, (value: never) => void> = {};
        const queries: string[] = [];
        const client: PgPoolClientLike = {
          query: (text: string | { text: string }) => {
            const sql = typeof text === 'string' ? text : text.text;
            queries.push(sql);
            if (!sql.startsWith('LISTEN')) return Promise.resolve({ rows: [], rowCount: 0 });
            return new Promise((resolve, reject) =>
              pending.set(sql, { resolve: () => resolve({ rows: [], rowCount: 0 }), reject }),
            );
          },
          release: () => undefined,
          on: (event: string, handler: (value: never) => void) => (handlers[event] = handler),
          removeListener: () => undefined,
        } as unknown as PgPoolClientLike;
        clients.push({
          queries,
          answer: (sql, error) => (error ? pending.get(sql)!.reject(error) : pending.get(sql)!.resolve()),
          notify: (message) => handlers.notification?.(message as never),
        });
        return client;
      },
    };
    const executor = fromPg(pool);
    const wakeUps = new PostgresListener(executor, 'ch', { minDelay: 1, maxDelay: 1 });
    const ends = new PostgresListener(executor, 'ch_ended', { minDelay: 1, maxDelay: 1 });
    const heard = vi.fn();
    const addingWakeUps = wakeUps.addWakeUps(heard);
    const addingEnds = ends.addEnds(() => undefined);
    await vi.waitFor(() => expect(clients[0]?.queries).toEqual(['LISTEN "ch"', 'LISTEN "ch_ended"']));
    // One reply: the first LISTEN done, the second failed, the connection lost.
    clients[0]!.answer('LISTEN "ch"');
    clients[0]!.answer('LISTEN "ch_ended"', new Error('terminating connection due to administrator command'));
    await addingWakeUps;
    await expect(addingEnds).rejects.toThrow(/terminating/);

    // The wake-ups' subscription is on a connection that is gone: it must LISTEN again elsewhere.
    await vi.waitFor(() => expect(clients[1]?.queries).toEqual(['LISTEN "ch"']));
    clients[1]!.answer('LISTEN "ch"');
    await vi.waitFor(() => expect(heard).toHaveBeenCalledTimes(1)); // once, for what it may have missed
    clients[1]!.notify({ channel: 'ch', payload: 'due:x' });
    expect(heard).toHaveBeenLastCalledWith('x');
    await wakeUps.close();
    await ends.close();
  });
});
