// The MySQL store's cancel notices (MySqlCancelNotices, through MySqlWakePoller), on a fake
// executor and fake timers: the counter a cancel or terminate of a leased instance moves is read in
// the poll's own statement, and only its holder is told, after one read of the flags it holds.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RESTING_CANCEL_POLL } from '../../src/mysql/mysql-cancel-notices.js';
import { MySqlWakePoller } from '../../src/mysql/mysql-wake-poller.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';

/** What the fake database holds: the cancel counter, and the requests stored (by id: lease token and kind). */
interface FakeDatabase {
  counter: number;
  requests: Map<string, { token: string; terminate: boolean }>;
  /** Each statement sent, by kind. */
  sent: Array<'poll' | 'counter' | 'flags'>;
  /** The ids each flag read asked about. */
  asked: string[][];
}

function fakeDatabase(): { db: FakeDatabase; executor: SqlExecutor } {
  const db: FakeDatabase = { counter: 0, requests: new Map(), sent: [], asked: [] };
  const executor: SqlExecutor = {
    query: async (sql, params = []) => {
      if (sql.includes('AS due')) {
        db.sent.push('poll');
        return { rows: [{ due: null, cancels: db.counter }], rowCount: 1 };
      }
      if (sql.includes('AS cancels')) {
        db.sent.push('counter');
        return { rows: [{ cancels: db.counter }], rowCount: 1 };
      }
      db.sent.push('flags');
      const ids = params as string[];
      db.asked.push(ids);
      const rows = ids.flatMap((id) => {
        const request = db.requests.get(id);
        return request ? [{ id, lease_token: request.token, terminate_requested: request.terminate ? 1 : 0 }] : [];
      });
      return { rows, rowCount: rows.length };
    },
    transaction: () => Promise.reject(new Error('The wake-up poll runs no transaction.')),
  };
  return { db, executor };
}

/** A listener recording what it heard: `'wake'` for a plain wake-up, else `<id>:<kind>`. */
function recorder(): { heard: string[]; listener: (id?: string, kind?: string) => void } {
  const heard: string[] = [];
  return { heard, listener: (id, kind) => heard.push(kind === undefined ? 'wake' : `${id}:${kind}`) };
}

function request(db: FakeDatabase, id: string, token: string, terminate = false): void {
  db.requests.set(id, { token, terminate });
  db.counter++;
}

describe('MySQL cancel notices', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads the counter in the poll statement: as many statements as before while no request comes', async () => {
    vi.useFakeTimers();
    const { db, executor } = fakeDatabase();
    const poller = new MySqlWakePoller(executor, 'instances', 'cancel_notices', { minDelay: 5, maxDelay: 25 });
    const stop = await poller.add(() => undefined, { held: () => ['a', 'b'] });
    await vi.advanceTimersByTimeAsync(1_000);
    // Idle: 5, 10, 20, then every 25 ms (as the wake-up poll alone did), one statement each.
    expect(db.sent.length).toBeGreaterThanOrEqual(40);
    expect(db.sent.length).toBeLessThanOrEqual(42);
    expect(new Set(db.sent)).toEqual(new Set(['poll']));
    await stop();
  });

  it('names each held instance with a request to its holder, once per lease and kind, and wakes no one for it', async () => {
    vi.useFakeTimers();
    const { db, executor } = fakeDatabase();
    const poller = new MySqlWakePoller(executor, 'instances', 'cancel_notices', { minDelay: 5, maxDelay: 25 });
    const holder = recorder();
    const other = recorder();
    const held = ['a', 'b'];
    const stopHolder = await poller.add(holder.listener, { held: () => held });
    const stopOther = await poller.add(other.listener, { held: () => [] });

    request(db, 'a', 't1');
    request(db, 'z', 'elsewhere'); // held by another process
    await vi.advanceTimersByTimeAsync(30);
    expect(holder.heard).toEqual(['undefined:cancel', 'a:cancel']);
    expect(db.asked).toEqual([['a', 'b']]); // one read for every instance held, only once the counter moved

    // A terminate of the same lease is named again; another request elsewhere names nothing new.
    request(db, 'a', 't1', true);
    await vi.advanceTimersByTimeAsync(30);
    request(db, 'y', 'elsewhere');
    await vi.advanceTimersByTimeAsync(30);
    expect(holder.heard.filter((heard) => heard === 'a:cancel')).toEqual(['a:cancel', 'a:cancel']);

    // The same instance under a new lease (a retry claimed here again) is named again.
    request(db, 'a', 't2');
    await vi.advanceTimersByTimeAsync(30);
    expect(holder.heard.filter((heard) => heard === 'a:cancel')).toEqual(['a:cancel', 'a:cancel', 'a:cancel']);
    expect(holder.heard).not.toContain('wake');

    // A counter that moves while nothing is held reads no flags.
    held.length = 0;
    const reads = db.asked.length;
    request(db, 'x', 'elsewhere');
    await vi.advanceTimersByTimeAsync(30);
    expect(db.asked.length).toBe(reads);
    expect(new Set(other.heard)).toEqual(new Set(['undefined:cancel']));
    await stopOther();
    await stopHolder();
  });

  it('while the poll rests, reads the counter alone every RESTING_CANCEL_POLL ms while a listener holds leases, and nothing while none does', async () => {
    vi.useFakeTimers();
    const { db, executor } = fakeDatabase();
    const poller = new MySqlWakePoller(executor, 'instances', 'cancel_notices', { minDelay: 5, maxDelay: 25 });
    const holder = recorder();
    let held: string[] = [];
    const stop = await poller.add(holder.listener, { needsWakeUps: () => false, held: () => held });
    db.sent.length = 0;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(db.sent).toEqual([]);

    held = ['a'];
    await vi.advanceTimersByTimeAsync(1_000);
    expect(new Set(db.sent)).toEqual(new Set(['counter']));
    expect(db.sent.length).toBeGreaterThanOrEqual(1_000 / RESTING_CANCEL_POLL - 1);
    expect(db.sent.length).toBeLessThanOrEqual(1_000 / RESTING_CANCEL_POLL);

    request(db, 'a', 't1');
    await vi.advanceTimersByTimeAsync(RESTING_CANCEL_POLL + 30);
    expect(holder.heard).toEqual(['undefined:cancel', 'a:cancel']);
    await stop();
  });

  it('tells every listener that some request was stored (no id) before reading the flags, so a claim still out reads them at its start', async () => {
    vi.useFakeTimers();
    const { db, executor } = fakeDatabase();
    const poller = new MySqlWakePoller(executor, 'instances', 'cancel_notices', { minDelay: 5, maxDelay: 25 });
    const order: string[] = [];
    const holder = recorder();
    const held = () => {
      order.push('held read');
      return ['a'];
    };
    const stop = await poller.add(
      (id, kind) => (order.push(`told ${id ?? 'some'}:${kind}`), holder.listener(id, kind)),
      { held },
    );
    const idle = recorder();
    const stopIdle = await poller.add(idle.listener, { held: () => [] });
    order.length = 0;
    request(db, 'a', 't1');
    await vi.advanceTimersByTimeAsync(30);
    expect(order).toEqual(['told some:cancel', 'held read', 'told a:cancel']);
    expect(idle.heard).toEqual(['undefined:cancel']); // no wake-up: its worker only marks the claims it has out
    await stopIdle();
    await stop();
  });
});
