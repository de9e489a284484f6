import { Observable } from 'rxjs';

/** How often the store is read for what other processes changed, while a live page is open (ms). */
export const CHANGES_POLL_MS = 1_000;

/** What a live page shows, read from the store: compared between polls, so any change of it is heard. */
export type ChangeRead = () => Promise<string>;

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
 * pages hear when it changed. Nothing is read while no page is open.
 */
export class DashboardChanges {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private stopped = false;

  constructor(
    private readonly interval = CHANGES_POLL_MS,
    private readonly onError: (error: unknown) => void = () => undefined,
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
  }

  private disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
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
