// The MySQL store's cross-process wake-up poll (MySqlWakePoller), on a fake executor and fake
// timers: how often it reads the due marker as work becomes due and as the store goes idle.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MySqlWakePoller, WAKE_POLL_ACTIVE_WINDOW } from '../../src/mysql/mysql-wake-poller.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

/** An executor whose due marker is `marker.id`, recording when each read came (fake `Date.now()`). */
function markerExecutor(marker: { id: string | null }, reads: number[]): SqlExecutor {
  return {
    query: async () => {
      reads.push(Date.now());
      // One row always: the marker's subquery (NULL when nothing is due) and the cancel counter's.
      return { rows: [{ due: marker.id === null ? null : `1|${marker.id}`, cancels: 0 }], rowCount: 1 };
    },
    transaction: () => Promise.reject(new Error('The wake-up poll runs no transaction.')),
  };
}

const gapsOf = (reads: number[]) => reads.slice(1).map((t, i) => t - reads[i]!);

describe('MySQL wake-up poll', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('backs off to twice minDelay while work keeps becoming due, and to maxDelay once a window passes without any', async () => {
    vi.useFakeTimers();
    const marker: { id: string | null } = { id: null };
    const reads: number[] = [];
    const poller = new MySqlWakePoller(markerExecutor(marker, reads), 'instances', 'cancel_notices', {
      minDelay: 5,
      maxDelay: 25,
    });
    let woken = 0;
    const stop = await poller.add(() => woken++);

    // Idle from the start: 5, 10, 20, then every 25 ms.
    await vi.advanceTimersByTimeAsync(100);
    expect(gapsOf(reads).slice(0, 5)).toEqual([5, 10, 20, 25, 25]);

    // Work becomes due: heard at the next read, then the poll stays at 10 ms (2 x minDelay).
    marker.id = 'a';
    reads.length = 0;
    await vi.advanceTimersByTimeAsync(WAKE_POLL_ACTIVE_WINDOW / 2);
    expect(woken).toBe(1);
    const active = gapsOf(reads);
    expect(active[0]).toBe(5);
    expect(new Set(active.slice(1))).toEqual(new Set([10]));

    // Another start within the window: heard, and the window starts again.
    marker.id = 'b';
    reads.length = 0;
    await vi.advanceTimersByTimeAsync(WAKE_POLL_ACTIVE_WINDOW - 50);
    expect(woken).toBe(2);
    expect(Math.max(...gapsOf(reads))).toBe(10);

    // A window without a change: back to every 25 ms, as an idle process polls.
    reads.length = 0;
    await vi.advanceTimersByTimeAsync(WAKE_POLL_ACTIVE_WINDOW);
    expect(gapsOf(reads).slice(-3)).toEqual([25, 25, 25]);
    expect(woken).toBe(2);
    await stop();
  });

  it('never polls more often than maxDelay allows when maxDelay is below twice minDelay', async () => {
    vi.useFakeTimers();
    const marker: { id: string | null } = { id: 'a' };
    const reads: number[] = [];
    const poller = new MySqlWakePoller(markerExecutor(marker, reads), 'instances', 'cancel_notices', {
      minDelay: 8,
      maxDelay: 12,
    });
    const stop = await poller.add(() => undefined);
    await vi.advanceTimersByTimeAsync(20);
    marker.id = 'b';
    reads.length = 0;
    await vi.advanceTimersByTimeAsync(200);
    expect(gapsOf(reads)[0]).toBe(8);
    expect(new Set(gapsOf(reads).slice(1))).toEqual(new Set([12]));
    await stop();
  });

  it('starts polling even when the database is away at the first listen, and wakes the listener once it answers', async () => {
    vi.useFakeTimers();
    const marker: { id: string | null } = { id: null };
    const reads: number[] = [];
    const working = markerExecutor(marker, reads);
    let away = true;
    const executor: SqlExecutor = {
      ...working,
      query: (...args: Parameters<SqlExecutor['query']>) =>
        away ? Promise.reject(new Error('connect ECONNREFUSED')) : working.query(...args),
    };
    const poller = new MySqlWakePoller(executor, 'instances', 'cancel_notices', { minDelay: 5, maxDelay: 25 });
    let woken = 0;
    const stop = await poller.add(() => woken++);
    await vi.advanceTimersByTimeAsync(100);
    expect(reads).toEqual([]);

    // The database answers again, with an instance that became due meanwhile: the listener hears of it.
    away = false;
    marker.id = 'a';
    await vi.advanceTimersByTimeAsync(30);
    expect(woken).toBe(1);

    // And the poll goes on as usual: the next change is heard too.
    marker.id = 'b';
    await vi.advanceTimersByTimeAsync(30);
    expect(woken).toBe(2);
    await stop();
  });

  it('reads nothing while no listener needs wake-ups, and wakes them for what became due meanwhile once one does', async () => {
    vi.useFakeTimers();
    const marker: { id: string | null } = { id: 'a' };
    const reads: number[] = [];
    const poller = new MySqlWakePoller(markerExecutor(marker, reads), 'instances', 'cancel_notices', {
      minDelay: 5,
      maxDelay: 25,
    });
    let busy = false;
    let woken = 0;
    const stop = await poller.add(() => woken++, { needsWakeUps: () => !busy });
    let other = 0;
    const stopOther = await poller.add(() => other++, { needsWakeUps: () => false });
    await vi.advanceTimersByTimeAsync(50);
    expect(woken).toBe(0);

    // One listener still needs them: the poll goes on, and wakes both.
    marker.id = 'b';
    await vi.advanceTimersByTimeAsync(30);
    expect([woken, other]).toEqual([1, 1]);

    // Neither does: not a read, however long, while the marker moves twice.
    busy = true;
    reads.length = 0;
    marker.id = 'c';
    await vi.advanceTimersByTimeAsync(500);
    marker.id = 'd';
    await vi.advanceTimersByTimeAsync(500);
    expect(reads).toEqual([]);
    expect([woken, other]).toEqual([1, 1]);

    // One needs them again: the next read (within the poll's pace) finds the marker moved since the
    // last read before, and wakes them.
    busy = false;
    await vi.advanceTimersByTimeAsync(10);
    expect(reads.length).toBeGreaterThan(0);
    expect([woken, other]).toEqual([2, 2]);

    // What the backlog's claims took meanwhile (the marker back where it was at the last read)
    // wakes nobody.
    busy = true;
    await vi.advanceTimersByTimeAsync(100);
    marker.id = 'e';
    await vi.advanceTimersByTimeAsync(100);
    marker.id = 'd';
    busy = false;
    await vi.advanceTimersByTimeAsync(30);
    expect([woken, other]).toEqual([2, 2]);

    // A needsWakeUps() that throws counts as needing them.
    busy = true;
    await stopOther();
    const stopThrowing = await poller.add(() => other++, {
      needsWakeUps: () => {
        throw new Error('broken');
      },
    });
    marker.id = 'f';
    await vi.advanceTimersByTimeAsync(30);
    expect([woken, other]).toEqual([3, 3]);
    await stopThrowing();
    await stop();
  });
});
