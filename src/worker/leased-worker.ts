import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { WorkflowClock } from '../time/workflow-clock.js';

/** A lease as the loop grants it to one claim. */
export interface Lease {
  owner: string;
  token: string;
  now: number;
  until: number;
}

export interface LeasedWorkerOptions<T> {
  owner?: string;
  /** Items executed at once. */
  concurrency: number;
  pollInterval: number;
  leaseDuration: number;
  heartbeatInterval: number;
  shutdownTimeout: number;
  clock: WorkflowClock;
  claim(lease: Lease, limit: number): Promise<T[]>;
  /** Extends an item's lease; `false` when it is gone. */
  renew(item: T, until: number): Promise<boolean>;
  /** Runs an item to its end; `shutdown` aborts when the worker stops. Must not throw. */
  execute(item: T, shutdown: AbortSignal): Promise<void>;
  onError(error: unknown, stage: 'claim' | 'renew'): void;
}

/**
 * The generic leased loop: claims due items up to `concurrency`, runs them, renews their leases
 * by heartbeat, and on shutdown stops claiming, aborts what runs and waits for it. `kick()` looks
 * for work at once instead of at the next poll; `drain()` runs everything due, for tests.
 */
export class LeasedWorker<T> {
  readonly owner: string;
  private readonly running = new Set<T>();
  private readonly shutdownController = new AbortController();
  private started = false;
  private stopping: Promise<void> | null = null;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private kicked = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly tasks = new Set<Promise<void>>();

  constructor(private readonly options: LeasedWorkerOptions<T>) {
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** Items running now. */
  get active(): ReadonlySet<T> {
    return this.running;
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.startHeartbeat();
    this.loop = this.run();
  }

  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  /**
   * Claims and runs due items again and again until a claim finds none; returns how many it ran.
   * Uses its own claims, so it works with the background loop off (tests, scripts).
   */
  async drain(options: { limit?: number } = {}): Promise<number> {
    this.startHeartbeat();
    let executed = 0;
    const max = options.limit ?? Infinity;
    while (executed < max && !this.shutdownController.signal.aborted) {
      const items = await this.options.claim(this.lease(), Math.min(this.options.concurrency, max - executed));
      if (items.length === 0) break;
      executed += items.length;
      await Promise.all(items.map((item) => this.track(item)));
    }
    if (!this.started) this.stopHeartbeat();
    return executed;
  }

  /**
   * Stops claiming, aborts running items (they see it through their `shutdown` signal and hand
   * back what they can), and waits up to `shutdownTimeout` for them. Items still running after
   * that keep their lease until it lapses. Safe to call twice.
   */
  shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      this.shutdownController.abort();
      this.wake?.();
      await this.loop;
      if (this.tasks.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...this.tasks]),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.shutdownTimeout))),
        ]);
        clearTimeout(timer);
      }
      this.stopHeartbeat();
    })();
    return this.stopping;
  }

  private async run(): Promise<void> {
    const signal = this.shutdownController.signal;
    while (!signal.aborted) {
      this.kicked = false;
      const free = this.options.concurrency - this.running.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const items = await this.options.claim(this.lease(), free);
          claimed = items.length;
          for (const item of items) void this.track(item);
        } catch (error) {
          this.options.onError(error, 'claim');
        }
      }
      if (signal.aborted) return;
      // A full claim means more may be due: look again at once, when a slot is free.
      if ((claimed > 0 && claimed === free) || this.kicked) {
        if (this.running.size < this.options.concurrency) continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.options.pollInterval);
        this.wake = done;
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
      this.wake = null;
    }
  }

  private track(item: T): Promise<void> {
    this.running.add(item);
    const task = this.options
      .execute(item, this.shutdownController.signal)
      .catch(() => undefined)
      .finally(() => {
        this.running.delete(item);
        this.tasks.delete(task);
        // A slot is free: the loop may have been waiting for one.
        if (this.started) this.kick();
      });
    this.tasks.add(task);
    return task;
  }

  private lease(): Lease {
    const now = this.options.clock.now();
    return { owner: this.owner, token: randomUUID(), now, until: now + this.options.leaseDuration };
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => void this.beat(), this.options.heartbeatInterval);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async beat(): Promise<void> {
    const until = this.options.clock.now() + this.options.leaseDuration;
    await Promise.all(
      [...this.running].map((item) => this.options.renew(item, until).catch((error) => this.options.onError(error, 'renew'))),
    );
  }
}
