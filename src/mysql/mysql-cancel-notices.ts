import type { SqlExecutor, SqlQueryOptions } from '../sql/sql-executor.js';
import { toBoolean } from '../sql/workflow-rows.js';
import { placeholders } from './mysql-tables.js';

/**
 * While the wake-up poll rests (every listener's worker claims on its own), how often it still
 * reads the cancel counter alone (ms), while some listener holds leases: a busy worker is the one
 * whose executions a cancel must reach. One read by primary key; nothing while nobody holds any.
 */
export const RESTING_CANCEL_POLL = 200;

/** A listener of the poll that hears the requests of the instances it holds. */
export interface CancelWatcher {
  /** Called with the id of an instance it holds that has a request; without one, as soon as some request was stored. */
  named(id?: string): void;
  /** The ids of the instances whose leases it holds (`WorkflowListenOptions.held()`). */
  held?(): Iterable<string>;
}

/**
 * The cancels and terminates of leased instances, heard through the counter `requestCancel()`
 * moves in `<schema>_cancel_notices` (MySQL has no NOTIFY to say which instance). The wake-up poll
 * reads the counter in the statement it sends anyway (`counter`); when it moves, the flags of every
 * instance the watchers hold are read in one statement, and each with a request is named to its
 * holder, once per lease and kind (a terminate after a cancel is named again). Never a plain
 * wake-up: a process that holds nothing the request named reads nothing more and claims nothing.
 *
 * Before that read, every watcher hears that some request was stored (`named()` without an id): a
 * claim whose transaction committed before the request may still be on its way (its answer, the
 * decoding of its payloads), its instances not held yet and so not read; the worker has such a
 * claim read the flags again at its start (`UnstartedClaims.someCancelStored()`). Both happen in the
 * same turn of the event loop, so every instance is either held or in a claim still out.
 */
export class MySqlCancelNotices {
  /** The counter as last read; `undefined` before the first read (which only sets it). */
  private seen: string | undefined;
  /** A read of the held instances is out, and whether another must follow it (the counter moved meanwhile, or it failed). */
  private reading: Promise<void> | null = null;
  private again = false;
  /** What was named, per lease (`id`, NUL, token): 1 a cancel, 2 a terminate. */
  private named = new Map<string, number>();

  constructor(
    private readonly executor: SqlExecutor,
    private readonly instances: string,
    private readonly table: string,
    private readonly watchers: () => Iterable<CancelWatcher>,
    private readonly readOptions: () => SqlQueryOptions | undefined,
  ) {}

  /** The counter as a scalar subquery, for the poll's statement. */
  get counter(): string {
    return `(SELECT seq FROM ${this.table} WHERE id = 1)`;
  }

  /** Whether some watcher holds a lease now (the resting poll reads the counter only then). */
  holding(): boolean {
    for (const watcher of this.watchers()) {
      try {
        for (const _ of watcher.held?.() ?? []) return true;
      } catch {
        // A watcher that cannot say is taken to hold nothing; the others still count.
      }
    }
    return false;
  }

  /** Reads the counter alone (the wake-up poll rests meanwhile). Rejects when the database does. */
  async readCounter(): Promise<void> {
    const { rows } = await this.executor.query(`SELECT ${this.counter} AS cancels`, [], this.readOptions());
    this.observe(rows[0]?.cancels);
  }

  /** The counter as the poll read it (`null` without its row: nothing is heard then, as before it existed). */
  observe(counter: unknown): void {
    const value = counter === null || counter === undefined ? '' : String(counter);
    const before = this.seen;
    this.seen = value;
    if (before === undefined || (before === value && !this.again)) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.again = false;
    this.reading = this.read().finally(() => {
      this.reading = null;
      // Moved again while this read was out (or it failed): the next poll's read starts another.
    });
  }

  /** Tells every watcher that some request was stored, reads the flags of what they hold and names those with a request. */
  private async read(): Promise<void> {
    const watchers = [...this.watchers()];
    const holders = new Map<string, CancelWatcher[]>();
    for (const watcher of watchers) {
      tell(watcher);
      let held: Iterable<string>;
      try {
        held = watcher.held?.() ?? [];
      } catch {
        continue;
      }
      for (const id of held) holders.set(id, [...(holders.get(id) ?? []), watcher]);
    }
    if (holders.size === 0) return;
    let rows: Array<Record<string, unknown>>;
    try {
      ({ rows } = await this.executor.query(
        `SELECT id, lease_token, terminate_requested FROM ${this.instances}
WHERE id IN (${placeholders(holders.size)}) AND (cancel_requested = 1 OR terminate_requested = 1 OR paused = 1)`,
        [...holders.keys()],
      ));
    } catch {
      // The database is away: the next read of the counter reads the flags again; the heartbeat covers the rest.
      this.again = true;
      return;
    }
    this.forgetAllBut(holders);
    for (const row of rows) {
      const id = String(row.id);
      const lease = `${id}\u0000${String(row.lease_token)}`;
      const kind = toBoolean(row.terminate_requested) ? 2 : 1;
      if ((this.named.get(lease) ?? 0) >= kind) continue;
      this.named.set(lease, kind);
      for (const watcher of holders.get(id) ?? []) tell(watcher, id);
    }
  }

  /** Drops what was named of instances no watcher holds any more. */
  private forgetAllBut(held: ReadonlyMap<string, unknown>): void {
    for (const lease of this.named.keys())
      if (!held.has(lease.slice(0, lease.indexOf('\u0000')))) this.named.delete(lease);
  }
}

function tell(watcher: CancelWatcher, id?: string): void {
  try {
    watcher.named(id);
  } catch {
    // A watcher's own failure is its business; the others still hear about it.
  }
}
