import { InFlight } from './in-flight.js';
import type { WorkflowClock } from '../time/workflow-clock.js';

/** What `LeaseRenewals` needs of the leased loop. */
export interface LeaseRenewalsOptions<T> {
  clock: WorkflowClock;
  leaseDuration: number;
  heartbeatInterval: number;
  /** What the heartbeat renews: the items running, and those claimed ahead. */
  items(): T[];
  /** Extends an item's lease to `until`; `false` when it is gone. */
  renew(item: T, until: number): Promise<boolean>;
  /** A renewal found `item`'s lease gone. */
  lost(item: T): void;
  onError(error: unknown, stage: 'renew'): void;
}

/** A renewal of one item that is out, and the one asked to follow it. */
interface Renewal<T> {
  item: T;
  done: Promise<boolean>;
  next: Promise<boolean> | null;
}

/**
 * The lease renewals of a leased loop's items: the heartbeat's, every `heartbeatInterval`, and those
 * asked for between beats (`renewNow()`: the store said a cancel or terminate of the item's
 * instance was stored, and the renewal reads its flags). At most one renewal of an item is out at a
 * time: two at once would land in either order, the later one setting the lease back to the
 * earlier's end, and cost a statement for nothing. A heartbeat that finds one out joins it (it
 * extends the lease as far, but for the moments between them); an asked-for renewal that finds one
 * out follows it, since that one may have read the flags before the request was stored. Several
 * asked for while one is out share the one that follows.
 */
export class LeaseRenewals<T> {
  /** Kept in an array, not a `Map`: see `InFlight`. */
  private readonly out = new InFlight<Renewal<T>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: LeaseRenewalsOptions<T>) {}

  /** Starts the heartbeat (once). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.options.heartbeatInterval);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Renews the items `matches` accepts now, following any renewal of them that is out. */
  renewNow(matches: (item: T) => boolean): void {
    for (const item of this.options.items()) if (matches(item)) void this.renewItem(item, true);
  }

  private async beat(): Promise<void> {
    await Promise.all(this.options.items().map((item) => this.renewItem(item, false)));
  }

  private async renewItem(item: T, fresh: boolean): Promise<void> {
    if (!(await this.renew(item, fresh))) this.options.lost(item);
  }

  /**
   * Renews `item` to `leaseDuration` from now, or joins (`fresh` false) or follows (`fresh` true) the
   * renewal of it that is out. Resolves to `false` when the store says the lease is gone; a failure
   * is reported (`onError`) and resolves to `true`, since the lease may well hold.
   */
  private renew(item: T, fresh: boolean): Promise<boolean> {
    const current = this.out.findLast((renewal) => renewal.item === item);
    if (current === undefined) return this.send(item);
    if (!fresh) return current.done;
    // Started once `current` settled (and left `out`); a renewal started meanwhile read after the request too.
    const after = () => this.out.findLast((renewal) => renewal.item === item)?.done ?? this.send(item);
    return (current.next ??= current.done.then(after));
  }

  private send(item: T): Promise<boolean> {
    const { clock, leaseDuration } = this.options;
    const renewal: Renewal<T> = { item, done: null!, next: null };
    renewal.done = this.options
      .renew(item, clock.now() + leaseDuration)
      .catch((error: unknown) => {
        this.options.onError(error, 'renew');
        return true;
      })
      .finally(() => this.out.delete(renewal));
    this.out.add(renewal);
    return renewal.done;
  }
}
