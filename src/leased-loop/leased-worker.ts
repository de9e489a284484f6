import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { InFlight } from './in-flight.js';
import type { WorkflowLease } from '../storage/workflow-lease.js';
import { LeaseRenewals } from './lease-renewals.js';
import type { LeasedWorkerOptions } from './leased-worker-options.js';

export type { LeasedWorkerOptions, LeasedWorkerTimings } from './leased-worker-options.js';

/** The longest wait between claims while they fail (a database that is down). */
export const MAX_BACKOFF = 15_000;

/**
 * While a backlog lasts, the loop claims the next items before slots free up only when the items it
 * ran lately took at most this long (ms, a moving average): an item claimed ahead waits about one
 * such run for its slot, holding its lease, and a worker whose items run long would keep due work
 * from other processes that have room.
 */
export const CLAIM_AHEAD_MAX_RUN = 250;

/**
 * The generic leased loop: claims due items up to `concurrency`, runs them, renews their leases
 * by heartbeat, and on shutdown stops claiming, aborts what runs and waits for it. `kick()` looks
 * for work at once instead of at the next poll; `drain()` runs everything due, for tests.
 */
export class LeasedWorker<T> {
  readonly owner: string;
  private readonly running = new InFlight<T>();
  /** Items of `running` that called `ending()`: their slots went to other items. */
  private ending = 0;
  private readonly shutdownController = new AbortController();
  private started = false;
  private stopping: Promise<void> | null = null;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Something may be due: a kick, a poll, or a claim that came back full. The loop claims when a slot is free. */
  private wanted = true;
  private readonly tasks = new InFlight<Promise<void>>();
  /** Slots taken by items this process is creating itself (`reserve()`), not yet running. */
  private reserved = 0;
  private noneReserved: (() => void) | null = null; // set while shutdown waits for reserved slots
  /** The last claim filled every slot it asked for: more may be due, and claims go first. */
  private backlog = false;
  /** `drain()` calls under way: the heartbeat they started stops when the last ends (the loop off). */
  private draining = 0;
  /** Claims of `drain()` on their way: shutdown waits for them, so what they lease is handed back before the store closes. */
  private readonly drainClaims = new InFlight<Promise<unknown>>();
  /** Claims that failed in a row: the wait before the next poll doubles with each (see `pollDelay()`). */
  private claimFailures = 0;
  private lastClaim: number | null = null;
  /** Items named by the wake-ups since the last claim (a start in another process). */
  private readonly named = new Set<string>();
  /** Since the last claim, something asked to look at all due work (a plain wake-up, a poll). */
  private everything = true;
  /** When the loop looks at all due work at the latest (`Date.now()`), whatever named claims come between. */
  private nextPoll = 0;
  /**
   * Items claimed ahead while a backlog lasts, leased and waiting for a slot: a slot that frees up
   * starts the next of them at once, without waiting for a claim's round trip (see `run()`).
   */
  private readonly waiting: T[] = [];
  /** How long the items run lately (ms, a moving average): whether claiming ahead pays (`CLAIM_AHEAD_MAX_RUN`). */
  private runMs = Infinity;
  /** A claim of all due work (no `ids`) is out. */
  private claimingAll = false;

  /** The heartbeat, and the renewals `renewNow()` asks for between beats. */
  private readonly heartbeat: LeaseRenewals<T>;

  constructor(private readonly options: LeasedWorkerOptions<T>) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const { clock, leaseDuration, heartbeatInterval } = options;
    this.heartbeat = new LeaseRenewals<T>({
      clock,
      leaseDuration,
      heartbeatInterval,
      items: () => [...this.running, ...this.waiting],
      renew: (item, until) => options.renew(item, until),
      // An item claimed ahead whose lease is gone (taken over after a stall) is not started.
      lost: (item) => {
        const index = this.waiting.indexOf(item);
        if (index >= 0) this.waiting.splice(index, 1);
      },
      onError: (error, stage) => options.onError(error, stage),
    });
  }

  /**
   * Renews the items of `id` this loop runs or holds claimed ahead now, not at the next heartbeat:
   * the store said a cancel or terminate of it was stored, and the renewal reads the flags (and hands
   * them to the item, as a heartbeat's does). Coalesced with the heartbeat (see `LeaseRenewals`).
   */
  renewNow(id: string): void {
    const idOf = this.options.idOf;
    if (idOf) this.heartbeat.renewNow((item) => idOf(item) === id);
  }

  /** Items running now. */
  get active(): Iterable<T> & { readonly size: number } {
    return this.running;
  }

  /** Items claimed ahead, leased and waiting for a slot. */
  get queued(): readonly T[] {
    return this.waiting;
  }

  /** Whether the background loop runs (started and not shut down). */
  get looping(): boolean {
    return this.started && this.stopping === null;
  }

  /**
   * Whether the loop will look at all due work again without a wake-up: a backlog lasts (the last
   * claim filled every slot it asked for) and either a claim of all due work is out or the next
   * one is wanted, made as soon as a slot frees. A wake-up would change nothing meanwhile: what
   * became due is found by that claim, or, if it comes back short (the backlog over), by the
   * wake-ups from then on. A failed claim ends it (the next one waits for a poll or a kick).
   */
  get claimsUnprompted(): boolean {
    return this.looping && this.backlog && (this.claimingAll || this.wanted);
  }

  /** When the last claim answered (the clock's epoch ms; the loop claims at least every poll), or `null`. */
  get lastClaimAt(): number | null {
    return this.lastClaim;
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.heartbeat.start();
    this.loop = this.run();
  }

  /**
   * Takes a slot for an item this process creates already leased (a local start), when the loop
   * runs, a slot is free and no claimed work is known to wait; returns the lease to create it
   * with, or `null`. Follow with `adopt()` once it is created, or `unreserve()`.
   */
  reserve(): WorkflowLease | null {
    if (!this.started || this.stopping || this.backlog) return null;
    if (this.slotsTaken() >= this.options.concurrency) return null;
    this.reserved++;
    return this.lease(this.options.clock.now());
  }

  /** Runs an item created under a `reserve()`d lease, in its slot. */
  adopt(item: T): void {
    this.reserved--;
    void this.track(item);
    this.reservedSettled();
  }

  /** Gives back a `reserve()`d slot that went unused: to an item claimed ahead, if one waits. */
  unreserve(): void {
    this.reserved--;
    // Items may have gone to `waiting` while the slot was reserved (a claim that was out came back
    // full): only a freed slot starts them, and the loop claims nothing for them while they wait.
    this.slotFreed();
    this.reservedSettled();
  }

  /** Tells a shutdown waiting for the starts that reserved a slot that none is left. */
  private reservedSettled(): void {
    if (this.reserved === 0 && this.noneReserved) {
      this.noneReserved();
      this.noneReserved = null;
    }
  }

  /**
   * Looks for work now instead of at the next poll. `id` names the one item the wake-up made due:
   * when only named wake-ups came, there is room for them all and no claimed work is known to wait,
   * the loop claims just those, by id, as it runs a local start at once (`reserve()`).
   */
  kick(id?: string): void {
    if (id === undefined || !this.options.idOf || this.named.size >= this.options.concurrency) this.everything = true;
    else this.named.add(id);
    this.wanted = true;
    this.wake?.();
  }

  /**
   * Claims and runs due items again and again until a claim finds none; returns how many it ran.
   * Uses its own claims, so it works with the background loop off (tests, scripts).
   */
  async drain(options: { limit?: number } = {}): Promise<number> {
    // After shutdown nothing runs here any more (and no heartbeat timer is started again).
    if (this.shutdownController.signal.aborted) return 0;
    this.heartbeat.start();
    this.draining++;
    let executed = 0;
    try {
      const max = options.limit ?? Infinity;
      while (executed < max && !this.shutdownController.signal.aborted) {
        const now = this.options.clock.now();
        // Tracked as the claim answers, so a shutdown that waits for the claim finds its items running.
        const claim = this.options
          .claim(this.lease(now), now, Math.min(this.options.concurrency, max - executed))
          .then((items) => items.map((item) => this.track(item)));
        this.drainClaims.add(claim);
        const tasks = await claim.finally(() => this.drainClaims.delete(claim));
        this.lastClaim = this.options.clock.now();
        if (tasks.length === 0) break;
        executed += tasks.length;
        await Promise.all(tasks);
      }
    } finally {
      // Another drain() may still run items whose leases the heartbeat renews (and a failed claim
      // leaves no timer behind).
      if (--this.draining === 0 && !this.started) this.heartbeat.stop();
    }
    return executed;
  }

  /**
   * Stops claiming, aborts running items (they see it through their `shutdown` signal and hand
   * back what they can), and waits up to `shutdownTimeout` for them, for the starts that reserved a
   * slot before it began and for the claims `drain()` had out (their items, leased, run with the
   * aborted signal and hand their leases back before the store closes). Items still running after
   * that go to `abandon()` (reported, their leases released). Safe to call twice.
   */
  shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      this.shutdownController.abort();
      this.wake?.();
      await this.loop;
      // Claimed ahead, never started: each runs with the aborted signal, so it hands its lease back at once.
      for (const item of this.waiting.splice(0)) void this.track(item);
      if (this.tasks.size > 0 || this.reserved > 0 || this.drainClaims.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.shutdownTimeout)));
        if (this.reserved > 0)
          await Promise.race([new Promise<void>((resolve) => (this.noneReserved = resolve)), timeout]);
        await Promise.race([Promise.allSettled([...this.drainClaims]), timeout]);
        await Promise.race([Promise.allSettled([...this.tasks]), timeout]);
        clearTimeout(timer);
        this.noneReserved = null;
        if (this.running.size > 0) await this.options.abandon?.([...this.running]);
      }
      this.heartbeat.stop();
    })();
    return this.stopping;
  }

  private async run(): Promise<void> {
    const signal = this.shutdownController.signal;
    while (!signal.aborted) {
      const room = this.room();
      // Claim only when something may be due (a kick, a poll, a claim that came back full) and there is room.
      if (room > 0 && this.wanted) {
        const free = this.options.concurrency - this.slotsTaken();
        this.wanted = false;
        const ids =
          this.everything || this.backlog || this.named.size > free || Date.now() >= this.nextPoll
            ? undefined
            : [...this.named];
        this.named.clear();
        this.everything = false;
        const limit = ids === undefined ? room : free;
        this.claimingAll = ids === undefined;
        try {
          const now = this.options.clock.now();
          const items = await this.options.claim(this.lease(now), now, limit, ids);
          this.claimingAll = false;
          this.claimFailures = 0;
          this.lastClaim = this.options.clock.now();
          if (ids === undefined) {
            // A full claim means more may be due: claim again as soon as there is room.
            this.backlog = items.length === limit;
            if (this.backlog) this.wanted = true;
            this.nextPoll = Date.now() + this.pollDelay();
          } else if (!ids.every((id) => items.some((item) => this.options.idOf!(item) === id))) {
            // One was not taken (another worker has it, or only a full claim may take it): look at everything now.
            this.everything = true;
            this.wanted = true;
          }
          // Slots that freed up while the claim was out took waiting items first (see `track()`).
          for (const item of items) {
            if (this.slotsTaken() < this.options.concurrency && !signal.aborted) void this.track(item);
            else this.waiting.push(item);
          }
        } catch (error) {
          // Tried again after a backoff (or at a kick), not at once: a database that is down isn't hammered.
          this.claimingAll = false;
          this.claimFailures++;
          this.everything = true;
          this.nextPoll = Date.now() + this.pollDelay();
          this.options.onError(error, 'claim');
        }
        if (signal.aborted) return;
        if (this.wanted && this.room() > 0) continue;
      }
      await new Promise<void>((resolve) => {
        // The poll keeps its time whatever claims by id came since the last full claim.
        const delay = Math.min(Math.max(0, this.nextPoll - Date.now()), this.pollDelay());
        const timer = setTimeout(() => {
          this.wanted = true;
          this.everything = true;
          done();
        }, delay);
        this.wake = done;
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
      this.wake = null;
    }
  }

  /**
   * How many items the next claim may take: the free slots, and while a backlog lasts and items run
   * briefly, as many again to wait for slots, less those already waiting. Claimed ahead, the next
   * items are leased while the slots still run (the claim's round trip overlaps their work) and a
   * slot that frees up starts one at once. The claims take no more items in all, only sooner.
   */
  private room(): number {
    const { concurrency } = this.options;
    const ahead =
      this.backlog && this.runMs <= (this.options.claimAheadMaxRun ?? CLAIM_AHEAD_MAX_RUN) ? concurrency : 0;
    return concurrency + ahead - this.slotsTaken() - this.waiting.length;
  }

  /**
   * The poll interval, or after failed claims a backoff: doubling from it with each failure in a
   * row, up to `MAX_BACKOFF` (or the poll interval, if longer).
   */
  private pollDelay(): number {
    const { pollInterval } = this.options;
    if (this.claimFailures === 0) return pollInterval;
    return Math.max(pollInterval, Math.min(MAX_BACKOFF, pollInterval * 2 ** Math.min(this.claimFailures - 1, 20)));
  }

  /** Slots in use: items running but those `ending()`, and slots `reserve()`d. */
  private slotsTaken(): number {
    return this.running.size - this.ending + this.reserved;
  }

  private track(item: T): Promise<void> {
    this.running.add(item);
    const started = performance.now();
    let ended = false;
    const ending = () => {
      if (ended) return;
      ended = true;
      this.ending++;
      this.slotFreed();
    };
    const task = this.options
      .execute(item, this.shutdownController.signal, ending)
      .catch(() => undefined)
      .finally(() => {
        this.running.delete(item);
        this.tasks.delete(task);
        const ran = performance.now() - started;
        this.runMs = this.runMs === Infinity ? ran : this.runMs * 0.8 + ran * 0.2;
        if (ended) this.ending--;
        else this.slotFreed();
      });
    this.tasks.add(task);
    return task;
  }

  private slotFreed(): void {
    // The slot goes to an item claimed ahead, if one waits (after shutdown they all ran already).
    const next = this.waiting.shift();
    if (next !== undefined) void this.track(next);
    // There is room: the loop may be waiting for it to claim what is due.
    if (this.wanted) this.wake?.();
  }

  private lease(now: number): WorkflowLease {
    return { owner: this.owner, token: randomUUID(), leaseUntil: now + this.options.leaseDuration };
  }
}
