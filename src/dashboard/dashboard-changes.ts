import { Observable } from 'rxjs';

/** How often the store is read for what other processes changed, while a live page is open (ms). */
export const CHANGES_POLL_MS = 1_000;

/** What a live page shows, read from the store: compared between polls, so any change of it is heard. */
export type ChangeRead = () => Promise<string>;

/**
 * The store's own notifications of work other processes made due (`WorkflowStorage.listen()`):
 * subscribes `nudge`, resolving to what unsubscribes it, or `null` when the store sends none.
 */
export type ChangeNotices = (nudge: () => void) => Promise<(() => Promise<void>) | null>;

/** The least time between two reads that notifications bring forward (ms): a busy store notifies often. */
const NUDGE_GAP_MS = 250;

interface Watched {
  read: ChangeRead;
  /** What the last poll read; `undefined` before the first one. */
  last: string | undefined;
  listeners: Set<() => void>;
}

/**
 * Work done by other processes, for live pages: this process's `WorkflowEvents` show only its own
 * work, and no store tells every process of every write (PostgreSQL's NOTIFY on each write would
 * make every commit of the server wait in one queue). So while a page is open, what it shows is
 * read again once a `CHANGES_POLL_MS` (an instance page: one primary-key read of the instance; the
 * list: its first page, one indexed read), once per process however many pages show it, and the
 * pages hear when it changed. Nothing is read while no page is open. Given the store's
 * notifications (`notices`: PostgreSQL's LISTEN tells of an instance created due, woken by a
 * signal, cancelled), a notice brings the next read forward, at most once per `NUDGE_GAP_MS`.
 */
export class DashboardChanges {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private stopped = false;
  /** The notifications' subscription while armed (its unsubscribe, once the store answered). */
  private listening: Promise<(() => Promise<void>) | null> | null = null;
  private nudgedAt = -Infinity;

  constructor(
    private readonly interval = CHANGES_POLL_MS,
    private readonly onError: (error: unknown) => void = () => undefined,
    private readonly notices: ChangeNotices | null = null,
  ) {}

  /**
   * Emits each time what `read` returns changes, as read once per interval while subscribed; `key`
   * names what is read, so pages showing one thing share one read.
   */
  watch(key: string, read: ChangeRead): Observable<void> {
    return new Observable<void>((subscriber) => {
      if (this.stopped) {
        subscriber.complete();
        return undefined;
      }
      let watched = this.watched.get(key);
      if (!watched) {
        watched = { read, last: undefined, listeners: new Set() };
        this.watched.set(key, watched);
        // Read once at once: the first change is then heard at the next poll.
        void this.readOne(watched);
      }
      const listener = () => subscriber.next();
      watched.listeners.add(listener);
      this.arm();
      return () => {
        watched.listeners.delete(listener);
        if (watched.listeners.size === 0) this.watched.delete(key);
        if (this.watched.size === 0) this.disarm();
      };
    });
  }

  /** Stops polling for good (the application shuts down). */
  stop(): void {
    this.stopped = true;
    this.disarm();
    this.watched.clear();
  }

  private arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.poll(), this.interval);
    this.timer.unref?.();
    if (this.notices) {
      this.listening = this.notices(() => this.nudge()).catch((error: unknown) => {
        this.onError(error);
        return null;
      });
    }
  }

  private disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const listening = this.listening;
    this.listening = null;
    // Unsubscribed once the store answered, also when that comes after this.
    void listening?.then((stop) => stop?.()).catch((error: unknown) => this.onError(error));
  }

  /** A notice: read what is watched now, unless a notice did less than `NUDGE_GAP_MS` ago. */
  private nudge(): void {
    const now = Date.now();
    if (!this.timer || now - this.nudgedAt < NUDGE_GAP_MS) return;
    this.nudgedAt = now;
    void this.poll();
  }

  /** One pass over what is watched; a pass still running when the next is due lets it go. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const watched of [...this.watched.values()]) await this.readOne(watched);
    } finally {
      this.polling = false;
    }
  }

  private async readOne(watched: Watched): Promise<void> {
    let now: string;
    try {
      now = await watched.read();
    } catch (error) {
      this.onError(error);
      return;
    }
    const before = watched.last;
    watched.last = now;
    if (before !== undefined && before !== now) for (const listener of [...watched.listeners]) listener();
  }
}
