import { doubledDelay, type DelayRange } from '../sql/delay-range.js';
import type { SqlExecutor, SqlQueryOptions } from '../sql/sql-executor.js';
import type { WorkflowListenOptions, WorkflowWakeUpKind } from '../storage/workflow-store-listen.js';
import { MySqlCancelNotices, RESTING_CANCEL_POLL, type CancelWatcher } from './mysql-cancel-notices.js';

/** A `listen()` listener: called for any wake-up, and with an id it holds and `'cancel'` for a request of it. */
export type WakeListener = (id?: string, kind?: WorkflowWakeUpKind) => void;

/** How often the poll looks, in milliseconds: `minDelay` after a change, doubling to `maxDelay` while nothing changes. */
export type WakePollInterval = DelayRange;

/**
 * For this long (ms) after the marker last moved, the poll backs off only to twice `minDelay`, not
 * to `maxDelay`: work that keeps becoming due (starts a fraction of a second apart) is found after
 * half that on average, and a process idle for longer polls as rarely as before.
 */
export const WAKE_POLL_ACTIVE_WINDOW = 1_000;

/**
 * Cross-process wake-ups without LISTEN/NOTIFY: one small indexed read, repeated, of a marker that
 * changes whenever an instance becomes due (a start, a signal's wake-up, a hand-back due now, a
 * cancel, a retry all set `wake_at` to now): the newest due instance without a lease (its
 * `wake_at` and id, from the end of `instances_wake`). When the marker moves, every listener is
 * called. The interval adapts: short right after a change, backing off to twice `minDelay` while
 * changes keep coming (within `WAKE_POLL_ACTIVE_WINDOW`), then to `maxDelay` while the store is
 * idle, so an idle process costs about forty tiny index reads a second (a hundred a second while
 * work keeps becoming due). Each process's own starts and signals wake its workers directly; the
 * workers' poll stays the safety net for anything this misses.
 *
 * The same statement reads the cancel counter (a second scalar subquery, by primary key), which
 * a cancel or terminate of a leased instance moves: the listeners holding such an instance are
 * told (`MySqlCancelNotices`), and no one is woken for it.
 *
 * While every listener says it needs no wake-ups (`needsWakeUps()`: its worker has a backlog and
 * claims all due work on its own), the poll reads no marker, keeping its pace; the first read after
 * compares with the last one made, as if the poll had only been slower, so what became due in
 * between and is still unclaimed moves the marker and wakes the listeners. It still reads the
 * cancel counter alone, every `RESTING_CANCEL_POLL` ms, while a listener holds leases.
 */
export class MySqlWakePoller {
  /** Each listener, with what says whether it needs wake-ups now (none: always) and what it holds. */
  private readonly listeners = new Map<WakeListener, WorkflowListenOptions>();
  /** Who holds a lease of an instance a request was stored for (the listeners, by what they hold). */
  private readonly cancels: MySqlCancelNotices;
  /** When the cancel counter was last read (`Date.now()`), for the resting poll's pace. */
  private counterReadAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;
  private marker: string | null = null;
  private delay: number;
  /** When the marker last moved (`Date.now()`). */
  private movedAt = -Infinity;
  private stopped = false;

  constructor(
    private readonly executor: SqlExecutor,
    private readonly instances: string,
    /** The cancel counter's table (`<schema>_cancel_notices`). */
    cancelNotices: string,
    private readonly interval: WakePollInterval = { minDelay: 5, maxDelay: 25 },
    /** The read's `query()` options (the `repeated` hint, once the store knows its server). */
    private readonly readOptions: () => SqlQueryOptions | undefined = () => undefined,
  ) {
    this.delay = interval.minDelay;
    this.cancels = new MySqlCancelNotices(executor, instances, cancelNotices, () => this.watchers(), readOptions);
  }

  private *watchers(): Iterable<CancelWatcher> {
    for (const [listener, { held }] of this.listeners) yield { named: (id) => listener(id, 'cancel'), held };
  }

  /**
   * Adds `listener` (with `needsWakeUps`, when it can do without for a while, and `held`, the
   * instances whose requests it hears); the first starts the poll. Resolves to a function that
   * removes it (the last stops the poll).
   */
  async add(listener: WakeListener, options: WorkflowListenOptions = {}): Promise<() => Promise<void>> {
    if (this.stopped) throw new Error('The store is closed: it no longer polls for wake-ups.');
    this.listeners.set(listener, options);
    if (this.listeners.size === 1) {
      // The first read only sets the marker: what is due already is the workers' first claim's business.
      // With the database away, the poll starts all the same and keeps looking at `maxDelay`; its
      // first answer sets the marker and wakes the listeners once (what became due meanwhile).
      try {
        this.marker = await this.read();
      } catch {
        this.delay = this.interval.maxDelay;
      }
      this.schedule();
    }
    let removed = false;
    return async () => {
      if (removed) return;
      removed = true;
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.clear();
    };
  }

  /** Stops this poll for good (a closed store makes a new poller for its next `listen()`). */
  close(): void {
    this.stopped = true;
    this.listeners.clear();
    this.clear();
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped || this.listeners.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      void this.tick().finally(() => {
        this.timer = null;
        this.schedule();
      });
    }, this.delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.needed()) {
      if (Date.now() - this.counterReadAt < RESTING_CANCEL_POLL || !this.cancels.holding()) return;
      this.counterReadAt = Date.now();
      // The database away: read again at the next pace; the heartbeat covers the gap.
      await this.cancels.readCounter().catch(() => undefined);
      return;
    }
    let marker: string;
    try {
      marker = await this.read();
    } catch {
      // The database is away: look again later; the workers' own poll covers the gap.
      this.delay = this.interval.maxDelay;
      return;
    }
    const moved = marker !== this.marker;
    this.marker = marker;
    const now = Date.now();
    if (moved) this.movedAt = now;
    const { minDelay, maxDelay } = this.interval;
    const cap = now - this.movedAt < WAKE_POLL_ACTIVE_WINDOW ? Math.min(maxDelay, 2 * minDelay) : maxDelay;
    this.delay = moved ? minDelay : Math.min(cap, doubledDelay(this.delay, this.interval));
    if (!moved || marker === '') return;
    for (const listener of [...this.listeners.keys()]) {
      try {
        listener();
      } catch {
        // A listener's own failure is its business; the others still hear about it.
      }
    }
  }

  /** Whether some listener needs wake-ups now (a `needsWakeUps()` that throws counts as needing them). */
  private needed(): boolean {
    for (const { needsWakeUps } of this.listeners.values()) {
      try {
        if (!needsWakeUps || needsWakeUps()) return true;
      } catch {
        return true;
      }
    }
    return false;
  }

  /** The marker (`''`: nothing due), reading the cancel counter in the same statement. */
  private async read(): Promise<string> {
    const { rows } = await this.executor.query(
      `SELECT (SELECT CONCAT(wake_at, '|', id) FROM ${this.instances} FORCE INDEX (instances_wake)
  WHERE lease_token IS NULL AND wake_at <= ? ORDER BY wake_at DESC, id DESC LIMIT 1) AS due, ${this.cancels.counter} AS cancels`,
      [Date.now()],
      this.readOptions(),
    );
    const row = rows[0];
    this.counterReadAt = Date.now();
    this.cancels.observe(row?.cancels);
    return row?.due === null || row?.due === undefined ? '' : String(row.due);
  }
}
