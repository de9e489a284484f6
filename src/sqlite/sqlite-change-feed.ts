import { doubledDelay, type DelayRange } from '../sql/delay-range.js';
import { toNumber } from '../sql/workflow-rows.js';
import type { WorkflowListenOptions, WorkflowWakeUpKind } from '../storage/workflow-store.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { placeholders } from './sqlite-statements.js';
import { FINISHED, type SqliteTables } from './sqlite-tables.js';

/** How often the feed looks for changes, in milliseconds: `minDelay` after a change, doubling to `maxDelay` while none comes. */
export type ChangePollInterval = DelayRange;

type WakeListener = (id?: string, kind?: WorkflowWakeUpKind) => void;
type EndListener = (id: string | null) => void;

/** What one look at the database found. */
interface Look {
  version: number;
  cancels: Array<{ seq: number; instance_id: string }>;
  ended: string[];
}

/**
 * `listen()` and `listenForEnds()` without LISTEN/NOTIFY: a short adaptive poll of `PRAGMA
 * data_version`, which changes when another connection (another process, or another store in
 * this one) commits to the file. It costs no read of any table, so it runs every few milliseconds
 * while something listens. When it moves, wake-up listeners look for work; when it moves or this
 * store committed, the cancel requests stored since the last look are named to every listener
 * (`'cancel'`), and the instances `handle.result()` waits for are asked whether they ended.
 */
export class SqliteChangeFeed {
  private readonly wakes = new Map<WakeListener, WorkflowListenOptions | undefined>();
  private readonly ends = new Map<string, Set<EndListener>>();
  private timer: NodeJS.Timeout | null = null;
  private looking = false;
  private delay: number;
  /** The last `data_version` read, and the newest cancel request named: `null` until the first look. */
  private version: number | null = null;
  private cancelSeq: number | null = null;
  private localChange = false;

  constructor(
    private readonly connection: SqliteConnection,
    private readonly t: SqliteTables,
    private readonly interval: ChangePollInterval = { minDelay: 5, maxDelay: 25 },
  ) {
    this.delay = interval.minDelay;
  }

  /** Told after each commit of the store's own connection, which `data_version` doesn't count. */
  committed(): void {
    this.localChange = true;
  }

  async listen(listener: WakeListener, options?: WorkflowListenOptions): Promise<() => Promise<void>> {
    // The first look sets where the feed starts: requests stored before it are not named.
    if (this.version === null) await this.look();
    this.wakes.set(listener, options);
    this.schedule(true);
    return async () => {
      this.wakes.delete(listener);
    };
  }

  /** Calls `listener` with `id` once the instance ended (again at later looks while it listens). Without `id`, never. */
  async listenForEnds(listener: EndListener, id?: string): Promise<() => Promise<void>> {
    if (id === undefined) return async () => undefined;
    if (this.version === null) await this.look();
    let listeners = this.ends.get(id);
    if (!listeners) this.ends.set(id, (listeners = new Set()));
    listeners.add(listener);
    this.schedule(true);
    return async () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.ends.delete(id);
    };
  }

  close(): void {
    this.wakes.clear();
    this.ends.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(soon = false): void {
    if (soon) {
      this.delay = this.interval.minDelay;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.timer || this.looking || (this.wakes.size === 0 && this.ends.size === 0)) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.looking = true;
      void this.look()
        .then((changed) => {
          this.delay = changed ? this.interval.minDelay : doubledDelay(this.delay, this.interval);
        })
        .catch(() => {
          // The file is away or locked for long: look again later; polling by the workers stays the safety net.
          this.delay = this.interval.maxDelay;
        })
        .finally(() => {
          this.looking = false;
          this.schedule();
        });
    }, this.delay);
    this.timer.unref();
  }

  /** One look; resolves to whether anything changed since the last. */
  private async look(): Promise<boolean> {
    const first = this.version === null;
    const local = this.localChange;
    this.localChange = false;
    const watched = [...this.ends.keys()];
    const look = await this.connection.read((sql): Look => {
      const version = toNumber(sql.get<{ data_version: number }>('PRAGMA data_version')!.data_version);
      if (first) {
        // Where the feed starts: the newest cancel request stands for those already stored.
        const newest = sql.get<{ seq: number }>(`SELECT COALESCE(MAX(seq), 0) AS seq FROM ${this.t.cancelRequests}`)!;
        return { version, cancels: [{ seq: newest.seq, instance_id: '' }], ended: [] };
      }
      if (version === this.version && !local) return { version, cancels: [], ended: [] };
      const cancels = sql.all<{ seq: number; instance_id: string }>(
        `SELECT seq, instance_id FROM ${this.t.cancelRequests} WHERE seq > ? ORDER BY seq`,
        [this.cancelSeq ?? 0],
      );
      const ended =
        watched.length === 0
          ? []
          : sql
              .all<{ id: string }>(
                `SELECT id FROM ${this.t.instances} WHERE id IN (${placeholders(watched.length)}) AND status IN ${FINISHED}`,
                watched,
              )
              .map((row) => row.id);
      return { version, cancels, ended };
    });
    if (first) {
      this.version = look.version;
      this.cancelSeq = toNumber(look.cancels[0]!.seq);
      return false;
    }
    const foreign = look.version !== this.version;
    this.version = look.version;
    if (foreign) for (const [listener, options] of this.wakes) if (options?.needsWakeUps?.() !== false) call(listener);
    if (look.cancels.length > 0) {
      this.cancelSeq = toNumber(look.cancels.at(-1)!.seq);
      for (const listener of this.wakes.keys()) {
        call(listener, undefined, 'cancel');
        for (const { instance_id } of look.cancels) call(listener, instance_id, 'cancel');
      }
    }
    for (const id of look.ended) for (const listener of [...(this.ends.get(id) ?? [])]) call(listener, id);
    return foreign || local;
  }
}

/** Calls a listener; its own failure is its business, and the others still hear. */
function call<A extends unknown[]>(listener: (...args: A) => void, ...args: A): void {
  try {
    listener(...args);
  } catch {
    // Ignored: see above.
  }
}
