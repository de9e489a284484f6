import type { PgNotificationLike, PgPoolClientLike, PgPoolLike } from './pg-like.js';

/** What `SqlExecutor.listen()` does, as `fromPg()` gives it. */
export type PgListen = (
  channel: string,
  onNotify: (payload: string) => void,
  onError?: (error: Error) => void,
) => Promise<() => Promise<void>>;

interface Subscription {
  readonly channel: string;
  readonly onNotify: (payload: string) => void;
  readonly onError?: (error: Error) => void;
  /** Set once `listen()` resolved: only then does a failure reach `onError` (before, `listen()` rejects). */
  active: boolean;
}

const toError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

/**
 * `fromPg()`'s `listen()`: the subscriptions of one executor share one client checked out of the
 * pool, which LISTENs to a channel while some subscription wants it (the channel's first
 * subscription sends `LISTEN`, its last one `UNLISTEN`) and goes back to the pool when the last
 * subscription ends. So a store listening for wake-ups and, while a `handle.result()` waits, for
 * ends holds one connection, not two. When that client fails or ends, every subscription on it
 * hears `onError` once and is over; the next `listen()` checks out another client.
 */
export function pgListen(pool: PgPoolLike): PgListen {
  let current: ListenClient | null = null;
  const gone = (client: ListenClient) => {
    if (current === client) current = null;
  };
  return async (channel, onNotify, onError) => {
    quoteChannel(channel);
    const client = (current ??= new ListenClient(pool, gone));
    const subscription: Subscription = { channel, onNotify, onError, active: false };
    await client.subscribe(subscription);
    let ended = false;
    return async () => {
      if (ended) return;
      ended = true;
      await client.leave(subscription);
    };
  };
}

/** One client checked out for LISTEN and the subscriptions on it. */
class ListenClient {
  private readonly subscriptions = new Set<Subscription>();
  /** Each channel LISTENed to (or being): its statement, which later subscribers of it wait for too. */
  private readonly channels = new Map<string, Promise<unknown>>();
  private readonly client: Promise<PgPoolClientLike>;
  /** Set when the client failed or went back to the pool: nothing more happens on it. */
  private over: Error | null = null;

  constructor(
    pool: PgPoolLike,
    private readonly gone: (self: ListenClient) => void,
  ) {
    this.client = pool.connect().then(
      (client) => {
        client.on('notification', this.onNotification);
        client.on('error', this.onClientError);
        client.on('end', this.onEnd);
        return client;
      },
      (error: unknown) => {
        this.over = toError(error);
        this.gone(this);
        throw this.over;
      },
    );
  }

  /** Adds `subscription`, LISTENing to its channel unless that is done already; rejects when the client can't. */
  async subscribe(subscription: Subscription): Promise<void> {
    // Counted at once, so that the last subscription leaving meanwhile keeps the client.
    this.subscriptions.add(subscription);
    try {
      const client = await this.client;
      if (this.over) throw this.over;
      let listening = this.channels.get(subscription.channel);
      if (!listening) {
        listening = client.query(`LISTEN ${quoteChannel(subscription.channel)}`);
        this.channels.set(subscription.channel, listening);
      }
      await listening;
      if (this.over) throw this.over;
    } catch (error) {
      // A LISTEN that failed leaves the connection in doubt: every subscription on it starts over.
      this.fail(toError(error));
      this.subscriptions.delete(subscription);
      throw toError(error);
    }
    subscription.active = true;
  }

  /** Removes `subscription`: UNLISTENs its channel if it was the channel's last, gives the client back if it was the last. */
  async leave(subscription: Subscription): Promise<void> {
    if (!this.subscriptions.delete(subscription) || this.over) return;
    const client = await this.client;
    // Another subscription that left meanwhile may have given the client back already.
    if (this.over) return;
    if (this.subscriptions.size === 0) {
      this.over = new Error('The LISTEN connection went back to the pool.');
      this.gone(this);
      try {
        // Nothing may stay LISTENed to on a client the pool lends out again.
        await client.query('UNLISTEN *');
        this.detach(client, false);
        client.release();
      } catch (error) {
        this.detach(client, true);
        client.release(toError(error));
      }
      return;
    }
    if ([...this.subscriptions].some((other) => other.channel === subscription.channel)) return;
    // Taken out before the statement is sent: a subscriber of the channel that comes meanwhile
    // sends its own LISTEN, which the client runs after this UNLISTEN.
    this.channels.delete(subscription.channel);
    try {
      await client.query(`UNLISTEN ${quoteChannel(subscription.channel)}`);
    } catch (error) {
      this.fail(toError(error));
    }
  }

  private readonly onNotification = (message: PgNotificationLike) => {
    for (const subscription of [...this.subscriptions]) {
      if (subscription.channel === message.channel) subscription.onNotify(message.payload ?? '');
    }
  };

  private readonly onClientError = (error: Error) => this.fail(error);

  private readonly onEnd = () =>
    this.fail(
      new Error(`The LISTEN connection for ${[...this.channels.keys()].map((c) => `"${c}"`).join(', ')} ended.`),
    );

  /** The client is lost: the pool destroys it, and every subscription hears of it once. */
  private fail(error: Error): void {
    if (this.over) return;
    this.over = error;
    this.gone(this);
    void this.client.then(
      (client) => {
        this.detach(client, true);
        client.release(error);
      },
      () => undefined,
    );
    for (const subscription of [...this.subscriptions]) {
      this.subscriptions.delete(subscription);
      if (subscription.active) subscription.onError?.(error);
    }
  }

  /**
   * A destroyed client keeps `onClientError` (a no-op once over): an error it emits later must not
   * crash the process. A client given back to the pool gets the pool's own listener again.
   */
  private detach(client: PgPoolClientLike, keepErrorListener: boolean): void {
    client.removeListener('notification', this.onNotification);
    client.removeListener('end', this.onEnd);
    if (!keepErrorListener) client.removeListener('error', this.onClientError);
  }
}

/** `channel` quoted for LISTEN, checked to be a plain lowercase identifier (the store's channels are). */
export function quoteChannel(channel: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new TypeError(`Invalid LISTEN channel ${JSON.stringify(channel)}.`);
  return `"${channel}"`;
}
