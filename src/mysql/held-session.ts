/** What a held connection needs: `query()`, and `destroy()` to close it (a mysql2 pool connection has both). */
interface HeldConnection {
  query(sql: string): Promise<unknown>;
  destroy?(): void;
  once?(event: 'error' | 'end', listener: () => void): unknown;
  removeListener?(event: 'error' | 'end', listener: () => void): unknown;
}

/** How long a held connection may sit unused before it is closed (the pool then lends a fresh one). */
const MAX_IDLE_MS = 30_000;

/**
 * At most one pooled connection that `fromMysql2()` keeps between the store's own short
 * transactions (claims, write batches, signals), its session set once to READ COMMITTED with
 * autocommit off: a transaction on it is its statements and `COMMIT`, without `SET TRANSACTION`
 * and `START TRANSACTION`, two round trips fewer. Its session differs from the pool's, so it never
 * goes back to the pool: it is closed (`destroy()`) when it fails (a statement, or the connection
 * while idle), when it sat unused for 30 s, and when the store closes; the pool then opens another
 * as it needs. A transaction that finds it busy takes a connection of the pool as before, and the
 * first such to end well becomes the held one. So the store keeps one connection of the pool
 * while it is busy, as the PostgreSQL store keeps its LISTEN connection; of a pool of at least
 * `MIN_POOL` connections only.
 */
export class HeldSession<C extends HeldConnection = HeldConnection> {
  /**
   * The smallest pool a connection is held from: in a smaller one it would be too large a share
   * (in a pool of one, every other statement would wait until it sat unused for 30 s).
   */
  static readonly MIN_POOL = 4;

  /** `enabled: false` (a pool too small, or of unknown size): never holds a connection. */
  constructor(private readonly enabled = true) {}

  /** The held connection when no transaction uses it, with the timer that closes it unused. */
  private idle: { connection: C; timer: NodeJS.Timeout; lost: () => void } | null = null;
  /** Whether a held connection exists (idle, in use, or being prepared). */
  private holding = false;
  /** Bumped by `close()`: a connection held before it is closed when its transaction ends. */
  private generation = 0;

  /** The idle held connection, now in use, or `null`. */
  take(): { connection: C; generation: number } | null {
    const idle = this.idle;
    if (!idle) return null;
    this.unpark(idle);
    return { connection: idle.connection, generation: this.generation };
  }

  /** Gives back the held connection after a transaction that ended well; closes it after a failure or a `close()`. */
  give(held: { connection: C; generation: number }, failed: boolean): void {
    if (failed || held.generation !== this.generation) {
      if (held.generation === this.generation) this.holding = false;
      held.connection.destroy?.();
      return;
    }
    this.park(held.connection);
  }

  /**
   * Offers a connection of the pool whose transaction just ended well: when none is held, keeps it
   * (its session set for holding, in the background) and answers `true`; the caller must then not
   * release it. Connections that can't be closed (no `destroy()`) are never held.
   */
  adopt(connection: C): boolean {
    if (!this.enabled || this.holding || typeof connection.destroy !== 'function') return false;
    this.holding = true;
    const generation = this.generation;
    void (async () => {
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.query('SET autocommit = 0');
      } catch {
        this.give({ connection, generation }, true);
        return;
      }
      this.give({ connection, generation }, false);
    })();
    return true;
  }

  /** Closes the idle held connection; one in use is closed when its transaction ends. */
  close(): void {
    this.generation++;
    this.holding = false;
    const idle = this.idle;
    if (idle) {
      this.unpark(idle);
      idle.connection.destroy?.();
    }
  }

  /** Keeps `connection` idle until a transaction takes it, it sits unused too long, or it fails (the server closed it). */
  private park(connection: C): void {
    const lost = () => {
      if (this.idle?.connection !== connection) return;
      this.unpark(this.idle);
      this.holding = false;
      connection.destroy?.();
    };
    const timer = setTimeout(lost, MAX_IDLE_MS);
    timer.unref();
    connection.once?.('error', lost);
    connection.once?.('end', lost);
    this.idle = { connection, timer, lost };
  }

  private unpark(idle: NonNullable<HeldSession<C>['idle']>): void {
    this.idle = null;
    clearTimeout(idle.timer);
    idle.connection.removeListener?.('error', idle.lost);
    idle.connection.removeListener?.('end', idle.lost);
  }
}
