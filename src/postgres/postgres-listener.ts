import type { DelayRange } from '../sql/delay-range.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowWakeUpKind } from '../storage/workflow-store.js';

/** How long to wait before the first reconnection attempt (default 100 ms), and the most it backs off to (30 s). */
export type ReconnectBackoff = DelayRange;

const DEFAULT_BACKOFF: ReconnectBackoff = { minDelay: 100, maxDelay: 30_000 };

/**
 * The payload prefix of an instance's end as earlier versions of this package sent it on the
 * wake-up channel (`ended:<id>`): a wake-up listener passes over it. Ends now go to a channel of
 * their own (`ENDS_CHANNEL_SUFFIX`), with the id as the payload.
 */
export const ENDED_PREFIX = 'ended:';

/** The payload prefix of one instance made due without a lease (`due:<id>`: a start, a hand-back); `''` says only that work is due. */
export const DUE_PREFIX = 'due:';

/**
 * The payload prefix of a cancel or terminate of one instance (`cancel:<id>`): its holder reads the
 * flags at once, and every worker looks for work (see `WorkflowWakeUpKind`). Versions before it sent
 * `''`, and read this one as that.
 */
export const CANCEL_PREFIX = 'cancel:';

/**
 * The payload prefix of a page of a bulk action (`cancels:["a","b"]`, a JSON array of ids): the
 * leased instances it cancelled, terminated or paused, each heard as `cancel:<id>`. Versions before
 * it read it as `''` (their holders hear of it at their next heartbeat).
 */
export const CANCELS_PREFIX = 'cancels:';

/**
 * What a listener hears: a notification's payload, or `null` after a reconnection (notifications
 * sent while the connection was down are lost, so anything may have happened).
 */
export type PostgresNotice = string | null;

/**
 * A LISTEN subscription to one channel, shared by every listener of it in a store, held while any
 * listener is there (and `linger` ms past the last one). When the connection fails or ends (a
 * restart, a failover, `pg_terminate_backend`), it reconnects with exponential backoff and then
 * calls every listener once, since notifications sent while it was away are lost. Polling stays the
 * safety net: a missed notification only costs latency.
 */
export class PostgresListener {
  private readonly listeners = new Set<(notice: PostgresNotice) => void>();
  /** Ends the current subscription; `null` while there is none. */
  private unsubscribe: (() => Promise<void>) | null = null;
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  /** Pending while the subscription outlives its last listener by `linger`. */
  private lingering: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly executor: SqlExecutor,
    private readonly channel: string,
    private readonly backoff: ReconnectBackoff = DEFAULT_BACKOFF,
    private readonly linger = 0,
  ) {}

  /** Whether the LISTEN connection is up. */
  get connected(): boolean {
    return this.unsubscribe !== null;
  }

  /**
   * Adds `listener`. The first one opens the connection and rejects when it can't (while a
   * reconnection is pending, a new listener just joins). Resolves to a function that removes it;
   * the last removal closes the connection (`linger` ms later, unless a listener came meanwhile).
   */
  async add(listener: (notice: PostgresNotice) => void): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('The store is closed: it no longer listens for notifications.');
    this.listeners.add(listener);
    if (this.lingering) clearTimeout(this.lingering);
    this.lingering = null;
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
      if (this.listeners.size > 0 || this.closed) return;
      if (this.linger <= 0) return this.stop();
      if (this.lingering) clearTimeout(this.lingering);
      this.lingering = setTimeout(() => {
        this.lingering = null;
        void this.stop().catch(() => undefined);
      }, this.linger);
      this.lingering.unref();
    };
  }

  /** Closes the connection for good. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    if (this.lingering) clearTimeout(this.lingering);
    this.lingering = null;
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
    /**
     * The connection was lost before `listen()` came back here: a shared connection can fail (another
     * channel's LISTEN on it failed) after it resolved this one's, while its answer is still on its way.
     */
    let lostEarly = false;
    try {
      subscription = await listen.call(
        this.executor,
        this.channel,
        (payload) => this.notifyAll(payload),
        () => {
          if (subscription === null) {
            lostEarly = true;
            return;
          }
          // Only the current subscription's loss counts (a stopped one may still report).
          if (this.unsubscribe !== subscription) return;
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
    if (lostEarly) {
      // Connected and lost at once: listened for nothing, so it reconnects (and then tells the listeners).
      this.scheduleReconnect();
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
   * On the wake-up channel: calls `listener` when work may be due (any notification but an older
   * version's end, and after a reconnection), with the instance's id when the notification names
   * the one instance it made due, or with its id and `'cancel'` when it names a cancel or terminate.
   */
  addWakeUps(listener: (id?: string, kind?: WorkflowWakeUpKind) => void): Promise<() => Promise<void>> {
    return this.add((notice) => {
      if (notice === null) listener();
      else if (notice.startsWith(DUE_PREFIX)) listener(notice.slice(DUE_PREFIX.length));
      else if (notice.startsWith(CANCEL_PREFIX)) listener(notice.slice(CANCEL_PREFIX.length), 'cancel');
      else if (notice.startsWith(CANCELS_PREFIX)) {
        const ids = namedIds(notice.slice(CANCELS_PREFIX.length));
        if (ids === null) listener();
        else for (const id of ids) listener(id, 'cancel');
      } else if (!notice.startsWith(ENDED_PREFIX)) listener();
    });
  }

  /** On the ends' channel: calls `listener` with the id of each instance that ended, and with `null` after a reconnection. */
  addEnds(listener: (id: string | null) => void): Promise<() => Promise<void>> {
    return this.add(listener);
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

/** The ids of a `cancels:` payload, or `null` when it isn't a JSON array of strings (then it only says that work may be due). */
function namedIds(json: string): string[] | null {
  try {
    const ids: unknown = JSON.parse(json);
    return Array.isArray(ids) && ids.every((id) => typeof id === 'string') ? ids : null;
  } catch {
    return null;
  }
}
