import { describe, expect, it, vi } from 'vitest';
import { PostgresListener } from '../../src/postgres/postgres-listener.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

// The LISTEN connection behind the PostgreSQL store's wake-ups, driven through a scripted executor
// (no server needed): reconnections must never leave a listener unconnected.

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
});
