import type { ClaimedInstance } from '../engine/claimed-instance.js';
import type { EngineLogger, WorkflowEngine } from '../engine/workflow-engine.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowLease } from '../storage/workflow-lease.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowUndeclaredDue, WorkflowWakeUpKind } from '../storage/workflow-store.js';
import { isObservableClock, type WorkflowClock } from '../time/workflow-clock.js';
import { LeasedWorker, type LeasedWorkerTimings } from '../leased-loop/leased-worker.js';
import { StoreOutage } from './store-outage.js';
import { UndeclaredVersions } from './undeclared-versions.js';
import type { WorkflowWakeUps } from './workflow-wake-ups.js';

/** The background worker's settings, resolved (milliseconds). */
export interface RuntimeWorkerSettings extends LeasedWorkerTimings {
  /** Run the background loop; without it only `drain()` runs work. */
  enabled: boolean;
  id: string | undefined;
}

/** `WorkflowWorker.loopStatus()`: whether the background loop runs and when it last claimed. */
export interface WorkflowLoopStatus {
  /** The background loop runs (the worker is enabled, the application started and not shutting down). */
  running: boolean;
  /** When a claim last answered, by the module's clock (epoch ms); `null` before the first. `drain()`'s claims count too. */
  lastClaimAt: number | null;
  /** Executions running in this process now. */
  executing: number;
  /**
   * What the worker's last look for instances no process claims found: due past its grace period,
   * of a workflow version this process does not declare, per version (see `UndeclaredVersions`).
   * `[]` before the first look (an idle worker looks at most once a minute), or with a store that can't count them.
   */
  undeclaredDue: WorkflowUndeclaredDue[];
}

export interface WorkflowRuntimeOptions {
  engine: WorkflowEngine;
  storage: WorkflowStorage;
  /**
   * Whether a workflow has a concurrency or rate limit (its starts are then left to claims), and
   * the versions this process declares (without `versions`, no warning about instances of others).
   */
  registry: { isLimited(workflow: string): boolean; versions?(): Array<{ name: string; version: number }> };
  wakeUps: WorkflowWakeUps;
  clock: WorkflowClock;
  worker: RuntimeWorkerSettings;
  logger: EngineLogger;
  /** This process's account of store failures (share it with the engine): logged once per outage. Default: one of its own. */
  outage?: StoreOutage;
}

/**
 * What runs workflows in this process, shared by `WorkflowWorker` (which starts and stops it with
 * the application) and `WorkflowClient` (which starts instances here at once when it can): the
 * engine, the leased loop that feeds it with its slots, the local starts that take a slot without
 * a claim, and the wake-ups that make the loop look for work before its next poll. Framework-free.
 */
export class WorkflowRuntime {
  private readonly loop: LeasedWorker<ClaimedInstance>;
  private readonly undeclared: UndeclaredVersions | null;
  private readonly enabled: boolean;
  private readonly stops: Array<() => unknown> = [];
  private stopped: Promise<void> | null = null;

  constructor(private readonly options: WorkflowRuntimeOptions) {
    const { engine, worker, clock } = options;
    const outage = options.outage ?? new StoreOutage(options.logger);
    this.enabled = worker.enabled;
    const { registry } = options;
    const undeclared = (this.undeclared = registry.versions
      ? new UndeclaredVersions({
          storage: options.storage,
          declared: () => registry.versions!(),
          logger: options.logger,
          // Long past a lease's lapse and a few polls: a process that declares the version would have claimed them.
          grace: 3 * Math.max(worker.leaseDuration, worker.pollInterval),
        })
      : null);
    this.loop = new LeasedWorker<ClaimedInstance>({
      owner: worker.id,
      concurrency: worker.concurrency,
      pollInterval: worker.pollInterval,
      leaseDuration: worker.leaseDuration,
      heartbeatInterval: worker.heartbeatInterval,
      shutdownTimeout: worker.shutdownTimeout,
      clock,
      claim: async (lease, now, limit, ids) => {
        const claimed = await engine.claim(lease, now, limit, ids);
        outage.recovered();
        // Idle (a claim of everything found nothing): rarely, one read for instances no process claims.
        if (claimed.length === 0 && ids === undefined) await undeclared?.idle(now);
        return claimed;
      },
      idOf: (claimed) => claimed.instance.id,
      renew: (claimed, until) => engine.renew(claimed, until),
      execute: (claimed, shutdown, ending) => {
        claimed.ending = ending;
        return engine.execute(claimed, shutdown);
      },
      onError: (error, stage) => outage.failed(error, stage === 'claim' ? 'claiming instances' : 'renewing a lease'),
      abandon: async (items) => {
        await Promise.all(items.map((claimed) => engine.abandon(claimed)));
      },
    });
    this.stops.push(options.wakeUps.subscribe(() => this.kick()));
  }

  /** This process's worker id, shown as `leaseOwner`. */
  get id(): string {
    return this.loop.owner;
  }

  /** The background loop's state, for health checks. */
  loopStatus(): WorkflowLoopStatus {
    return {
      running: this.loop.looping,
      lastClaimAt: this.loop.lastClaimAt,
      executing: this.loop.active.size,
      undeclaredDue: this.undeclared?.found ?? [],
    };
  }

  /**
   * Starts the background loop (when enabled), with the wake-ups from outside the process: the
   * store's notifications (when it has them) and a manual clock's moves.
   */
  async start(): Promise<void> {
    if (!this.enabled || this.stopped) return;
    const { clock, storage, logger, worker } = this.options;
    if (isObservableClock(clock)) this.stops.push(clock.onAdvance(() => this.kick()));
    try {
      // While a backlog keeps the loop claiming on its own, a store that polls for wake-ups may rest.
      const listener = (id?: string, kind?: WorkflowWakeUpKind) => {
        // A request the store could not name (MySQL's counter) concerns only the claims out here: no wake-up.
        if (kind === 'cancel')
          return id === undefined ? this.options.engine.heardOfSomeCancel() : this.heardOfCancel(id);
        this.kick(id);
      };
      const stopListening = await storage.listen(listener, {
        needsWakeUps: () => !this.loop.claimsUnprompted,
        held: () => this.heldIds(),
      });
      if (stopListening) this.stops.push(() => stopListening().catch(() => undefined));
    } catch (error) {
      logger.warn(`Listening for wake-ups failed; polling every ${worker.pollInterval} ms instead. ${String(error)}`);
    }
    this.loop.start();
  }

  /**
   * Runs every instance due at the clock's current time, again and again until none is left
   * (children started and parents they wake included); resolves to the number of executions.
   */
  drain(options: { limit?: number } = {}): Promise<number> {
    return this.loop.drain(options);
  }

  /** Stops claiming and lets running executions hand back (up to `shutdownTimeout`). Safe to call twice. */
  shutdown(): Promise<void> {
    this.stopped ??= (async () => {
      const stops = this.stops.splice(0);
      await this.loop.shutdown();
      await Promise.all(stops.map((stop) => stop()));
    })();
    return this.stopped;
  }

  /**
   * Looks for work now instead of at the next poll (a local start, a signal, a cancel); `id` names
   * the one instance a store's notification made due, which the loop may then claim by id.
   */
  kick(id?: string): void {
    if (this.enabled) this.loop.kick(id);
  }

  /**
   * A lease for an instance about to be created in this process, so it runs here at once without
   * a claim: when the background loop runs, a slot is free, and the workflow has no concurrency or
   * rate limit (those are counted by claims). Follow with `runStarted()` or `releaseStart()`.
   */
  reserveStart(workflow: string): WorkflowLease | null {
    if (!this.enabled || this.options.registry.isLimited(workflow)) return null;
    return this.loop.reserve();
  }

  /** Runs an instance created under `reserveStart()`'s lease, in the slot it reserved. */
  runStarted(instance: WorkflowInstance, lease: WorkflowLease): void {
    this.loop.adopt({
      instance: { ...instance, leaseToken: lease.token },
      signalCursor: instance.signalCursor,
      leaseUntil: lease.leaseUntil,
    });
  }

  /** The reserved start did not create an instance (it existed, or the store failed). */
  releaseStart(): void {
    this.loop.unreserve();
  }

  /**
   * While an execution of `id` runs in this process under its lease: resolves once it no longer
   * stands for the instance here (see `WorkflowEngine.whileRunningHere()`); `null` when none does.
   */
  whileRunningHere(id: string): Promise<void> | null {
    return this.options.engine.whileRunningHere(id);
  }

  /**
   * The store said a cancel or terminate of `id` was stored (in any process): an execution of it
   * here, or a claim of it not started yet, reads the flags now (its lease is renewed at once, not at
   * the next heartbeat; a claim still out reads them as it starts), and the loop looks for work, as
   * after any wake-up (the request made a suspended instance due).
   */
  private heardOfCancel(id: string): void {
    this.options.engine.heardOfCancel(id);
    this.loop.renewNow(id);
    this.kick();
  }

  /** The instances this loop holds leases of: those it runs, and those it claimed ahead. */
  private *heldIds(): Iterable<string> {
    for (const claimed of this.loop.active) yield claimed.instance.id;
    for (const claimed of this.loop.queued) yield claimed.instance.id;
  }

  /** A cancel or terminate accepted in this process: an execution running here stops now. */
  noticeCancel(id: string, terminate: boolean): void {
    this.options.engine.noticeCancel(id, terminate);
  }
}
