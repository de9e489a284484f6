import { placeholders } from './mysql-tables.js';
import { FINISHED } from '../sql/status-lists.js';
import { doubledDelay, type DelayRange } from '../sql/delay-range.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** How often the end poll looks, in milliseconds: `minDelay` after a wait began or an instance ended, doubling to `maxDelay`. */
export type EndPollInterval = DelayRange;

/** The most ids one poll asks about; more are asked in further statements of the same tick. */
const IDS_PER_QUERY = 500;

/**
 * `handle.result()` across processes without LISTEN/NOTIFY: while this process waits for some
 * instances to end, one small read asks which of them have (a primary-key lookup per id, all the
 * waits of the process in one statement), and calls their listeners. Nothing is read while nobody
 * waits. The interval adapts: `minDelay` when a wait begins or an instance ended, doubling to
 * `maxDelay` while none does, so a long wait costs one tiny read every `maxDelay` ms per process,
 * whatever the number of waits. Ends in this process reach `result()` at once through its own
 * events; the waits' own poll stays the safety net.
 */
export class MySqlEndPoller {
  private readonly watched = new Map<string, Set<(id: string | null) => void>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private delay: number;
  private stopped = false;

  constructor(
    private readonly executor: SqlExecutor,
    private readonly instances: string,
    private readonly interval: EndPollInterval = { minDelay: 5, maxDelay: 50 },
  ) {
    this.delay = interval.minDelay;
  }

  /**
   * Calls `listener` with `id` once the instance `id` has ended (again at later polls while it is
   * still listening). Without `id` there is nothing to ask about: it is never called.
   */
  async add(listener: (id: string | null) => void, id?: string): Promise<() => Promise<void>> {
    if (this.stopped) throw new Error('The store is closed: it no longer polls for ends.');
    if (id === undefined) return async () => {};
    let listeners = this.watched.get(id);
    if (!listeners) this.watched.set(id, (listeners = new Set()));
    listeners.add(listener);
    // A new wait is looked at soon (the instance may be about to end), not after a backed-off delay.
    this.delay = this.interval.minDelay;
    this.clear();
    this.schedule();
    let removed = false;
    return async () => {
      if (removed) return;
      removed = true;
      listeners.delete(listener);
      if (listeners.size === 0) this.watched.delete(id);
      if (this.watched.size === 0) this.clear();
    };
  }

  close(): void {
    this.stopped = true;
    this.watched.clear();
    this.clear();
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped || this.watched.size === 0 || this.timer || this.ticking) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.ticking = true;
      void this.tick().finally(() => {
        this.ticking = false;
        this.schedule();
      });
    }, this.delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const ids = [...this.watched.keys()];
    const ended: string[] = [];
    try {
      for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
        const chunk = ids.slice(i, i + IDS_PER_QUERY);
        const { rows } = await this.executor.query(
          `SELECT id FROM ${this.instances} WHERE id IN (${placeholders(chunk.length)}) AND status IN ${FINISHED}`,
          chunk,
        );
        ended.push(...rows.map((row) => String(row.id)));
      }
    } catch {
      // The database is away: look again later; the waits' own poll covers the gap.
      this.delay = this.interval.maxDelay;
      return;
    }
    this.delay = ended.length > 0 ? this.interval.minDelay : doubledDelay(this.delay, this.interval);
    for (const id of ended) {
      for (const listener of [...(this.watched.get(id) ?? [])]) {
        try {
          listener(id);
        } catch {
          // A listener's own failure is its business; the others still hear about it.
        }
      }
    }
  }
}
