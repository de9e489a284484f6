import type { DelayRange } from '../sql/delay-range.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** How long to wait before the first reconnection attempt (default 100 ms), and the most it backs off to (30 s). */
export type ReconnectBackoff = DelayRange;

const DEFAULT_BACKOFF: ReconnectBackoff = { minDelay: 100, maxDelay: 30_000 };

/** The payload prefix of an instance's end (`ended:<id>`); every other payload means work is due. */
export const ENDED_PREFIX = 'ended:';

/** The payload prefix of one instance made due without a lease (`due:<id>`: a start, a hand-back); `''` says only that work is due. */
export const DUE_PREFIX = 'due:';

/**
 * What a listener hears: a notification's payload, or `null` after a reconnection (notifications
 * sent while the connection was down are lost, so anything may have happened).
 */
export type PostgresNotice = string | null;

/**
 * One held LISTEN connection shared by every listener of a store. When the connection fails or
 * ends (a restart, a failover, `pg_terminate_backend`), it reconnects with exponential backoff and
 * then calls every listener once, since notifications sent while it was away are lost. Polling
 * stays the safety net: a missed notification only costs latency.
 */
export class PostgresListener {
  private readonly listeners = new Set<(notice: PostgresNotice) => void>();
  /** Ends the current subscription; `null` while there is none. */
  private unsubscribe: (() => Promise<void>) | null = null;
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly executor: SqlExecutor,
    private readonly channel: string,
    private readonly backoff: ReconnectBackoff = DEFAULT_BACKOFF,
  ) {}

  /** Whether the LISTEN connection is up. */
  get connected(): boolean {
    return this.unsubscribe !== null;
  }

  /**
   * Adds `listener`. The first one opens the connection and rejects when it can't (while a
   * reconnection is pending, a new listener just joins). Resolves to a function that removes it;
   * the last removal closes the connection.
   */
  async add(listener: (notice: PostgresNotice) => void): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('The store is closed: it no longer listens for notifications.');
    this.listeners.add(listener);
    if (!this.unsubscribe && !this.retry) {
      try {
        await (this.connecting ??= this.connect());
      } catch (error) {
        this.listeners.delete(listener);
        throw error;
      }
    }
    let removed = false;
    return async () => {
      if (removed) return;
      removed = true;
      this.listeners.delete(listener);
      if (this.listeners.size === 0) await this.stop();
    };
  }

  /** Closes the connection for good. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    // A connection still being made is not waited for: it may never come (pg's pool drops a
    // checkout that races its end()), and connect() gives it back itself once it sees `closed`.
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = null;
    await unsubscribe?.();
  }

  private async stop(): Promise<void> {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    await this.connecting?.catch(() => undefined);
    // A listener added while this waited keeps the connection (a failed attempt has rescheduled).
    if (!this.closed && this.listeners.size > 0) return;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = null;
    await unsubscribe?.();
  }

  private async connect(): Promise<void> {
    const listen = this.executor.listen;
    if (!listen) throw new Error('The executor cannot LISTEN (it has no listen()): use fromPg(pool).');
    let subscription: (() => Promise<void>) | null = null;
    try {
      subscription = await listen.call(
        this.executor,
        this.channel,
        (payload) => this.notifyAll(payload),
        () => {
          // Only the current subscription's loss counts (a stopped one may still report).
          if (subscription === null || this.unsubscribe !== subscription) return;
          this.unsubscribe = null;
          this.scheduleReconnect();
        },
      );
    } finally {
      this.connecting = null;
    }
    if (this.closed || this.listeners.size === 0) {
      // Everyone left while it connected.
      await subscription();
      return;
    }
    this.unsubscribe = subscription;
    this.failures = 0;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.listeners.size === 0 || this.retry) return;
    const delay = Math.min(this.backoff.maxDelay, this.backoff.minDelay * 2 ** this.failures);
    this.failures++;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed || this.listeners.size === 0 || this.unsubscribe || this.connecting) return;
      this.connecting = this.connect();
      this.connecting.then(
        // Notifications sent while the connection was down are lost: look once now.
        () => this.notifyAll(null),
        () => this.scheduleReconnect(),
      );
    }, delay);
    this.retry.unref();
  }

  /**
   * Calls `listener` when work may be due (any notification but an end, and after a reconnection),
   * with the instance's id when the notification names the one instance it made due.
   */
  addWakeUps(listener: (id?: string) => void): Promise<() => Promise<void>> {
    return this.add((notice) => {
      if (notice === null) listener();
      else if (notice.startsWith(DUE_PREFIX)) listener(notice.slice(DUE_PREFIX.length));
      else if (!notice.startsWith(ENDED_PREFIX)) listener();
    });
  }

  /** Calls `listener` with the id of each instance that ended, and with `null` after a reconnection. */
  addEnds(listener: (id: string | null) => void): Promise<() => Promise<void>> {
    return this.add((notice) => {
      if (notice === null) listener(null);
      else if (notice.startsWith(ENDED_PREFIX)) listener(notice.slice(ENDED_PREFIX.length));
    });
  }

  private notifyAll(notice: PostgresNotice): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(notice);
      } catch {
        // A listener's own failure is its business; the others still hear about it.
      }
    }
  }
}
