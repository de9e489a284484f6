import type {
  WorkflowPausedWorkflow,
  WorkflowPauseRequest,
  WorkflowPauseTarget,
} from '../storage/workflow-store-pauses.js';
import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';
import type { ClaimedInstance } from '../engine/claimed-instance.js';
import { retryInstance } from '../engine/retry-reopen.js';
import type { EngineLogger, WorkflowEngine } from '../engine/workflow-engine.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowCancelRequest,
  WorkflowFork,
  WorkflowInstanceDetails,
  WorkflowSignalResult,
  WorkflowUndeclaredDue,
  WorkflowWakeUpKind,
} from '../storage/workflow-store.js';
import { isObservableClock, type WorkflowClock } from '../time/workflow-clock.js';
import { LeasedWorker, type LeasedWorkerTimings } from '../leased-loop/leased-worker.js';
import { StoreOutage } from './store-outage.js';
import { UndeclaredVersions } from './undeclared-versions.js';
import { checkReplaysAtStartup, type CheckedDefinitions } from './startup-replay-check.js';
import type { WorkflowWakeUps } from './workflow-wake-ups.js';
import { ProcessHeartbeat } from './process-heartbeat.js';

/** The background worker's settings, resolved (milliseconds). */
export interface RuntimeWorkerSettings extends LeasedWorkerTimings {
  /** Run the background loop; without it only `drain()` runs work. */
  enabled: boolean;
  id: string | undefined;
  /** `worker.replayCheck`: how many unfinished instances per version to replay at startup; absent or `null`: none. */
  replayCheck?: number | null;
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

/** What `createInstance()` resolves to: the instance, and whether this call created it (else it existed). */
export interface CreatedInstance {
  instance: WorkflowInstance;
  created: boolean;
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
 * the application) and `WorkflowClient` (whose starts, signals, cancels and retries it carries out):
 * the engine, the leased loop that feeds it with its slots, the local starts that take a slot
 * without a claim, and the wake-ups (all through `WorkflowWakeUps`) that make the loop look for
 * work before its next poll. Framework-free.
 */
export class WorkflowRuntime {
  private readonly loop: LeasedWorker<ClaimedInstance>;
  private readonly undeclared: UndeclaredVersions | null;
  /** This process's record in the store, kept while the background loop runs. */
  private readonly heartbeat: ProcessHeartbeat;
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
        const claimed = await engine.claims.claim(lease, now, limit, ids);
        outage.recovered();
        // Idle (a claim of everything found nothing): rarely, one read for instances no process claims.
        if (claimed.length === 0 && ids === undefined) await undeclared?.idle(now);
        return claimed;
      },
      idOf: (claimed) => claimed.instance.id,
      renew: (claimed, until) => engine.claims.renew(claimed, until),
      execute: (claimed, shutdown, ending) => {
        claimed.ending = ending;
        return engine.execute(claimed, shutdown);
      },
      onError: (error, stage) => outage.failed(error, stage === 'claim' ? 'claiming instances' : 'renewing a lease'),
      abandon: async (items) => {
        await Promise.all(items.map((claimed) => engine.claims.abandon(claimed)));
      },
    });
    this.heartbeat = new ProcessHeartbeat({
      storage: options.storage,
      clock,
      owner: this.loop.owner,
      declared: () => registry.versions?.() ?? [],
      outage,
    });
    this.stops.push(options.wakeUps.subscribe((id) => this.kickLoop(id)));
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
   * store's notifications (when it has them) and a manual clock's moves; and records this process
   * in the store (`ProcessHeartbeat`) until shutdown, so the dashboard sees what it declares.
   */
  async start(): Promise<void> {
    if (!this.enabled || this.stopped) return;
    const { clock, storage, logger, worker, wakeUps } = this.options;
    if (isObservableClock(clock))
      this.stops.push(
        clock.onAdvance(() => {
          wakeUps.kick();
          void this.heartbeat.beat();
        }),
      );
    try {
      // While a backlog keeps the loop claiming on its own, a store that polls for wake-ups may rest.
      const listener = (id?: string, kind?: WorkflowWakeUpKind) => {
        // A request the store could not name (MySQL's counter) concerns only the claims out here: no wake-up.
        if (kind === 'cancel')
          return id === undefined ? this.options.engine.claims.someCancelStored() : this.cancelStored(id);
        wakeUps.kick(id);
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
    // Not awaited: the record is for operators, and a slow store must not hold the start back.
    void this.heartbeat.start();
  }

  /**
   * `worker.replayCheck` at startup (see `checkReplaysAtStartup()`): resolves to how many sampled
   * instances would diverge on `definitions`, 0 when the option is off.
   */
  checkReplays(definitions: CheckedDefinitions): Promise<number> {
    const sample = this.options.worker.replayCheck;
    if (!sample) return Promise.resolve(0);
    const { storage, logger, clock } = this.options;
    return checkReplaysAtStartup(storage, definitions, sample, logger, () => clock.now());
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
      await Promise.all([...stops.map((stop) => stop()), this.heartbeat.stop()]);
    })();
    return this.stopped;
  }

  /**
   * Creates an instance. In the application's `transaction`, it is not visible before the commit:
   * the store's wake-up (a NOTIFY on PostgreSQL) goes out with the commit. Otherwise, one due now
   * is created already leased to this process and runs here at once when a slot is free and the
   * workflow has no concurrency or rate limit (those are counted by claims); else the loop wakes.
   */
  async createInstance(instance: NewWorkflowInstance, transaction?: unknown): Promise<CreatedInstance> {
    const { storage, wakeUps } = this.options;
    if (transaction !== undefined) return storage.createInTransaction(transaction, instance);
    const due = instance.wakeAt === undefined || instance.wakeAt <= instance.now;
    const lease =
      due && this.enabled && !this.options.registry.isLimited(instance.workflow) ? this.loop.reserve() : null;
    if (lease === null) {
      const result = await storage.create(instance);
      if (result.created && due) wakeUps.kick();
      return result;
    }
    let result: CreatedInstance;
    try {
      result = await storage.create({ ...instance, lease });
    } catch (error) {
      this.loop.unreserve();
      throw error;
    }
    if (!result.created) {
      this.loop.unreserve();
      return result;
    }
    if (await this.handedBackWhilePaused(result.instance, lease.token)) {
      this.loop.unreserve();
      return result;
    }
    this.loop.adopt({
      instance: { ...result.instance, leaseToken: lease.token },
      signalCursor: result.instance.signalCursor,
      leaseUntil: lease.leaseUntil,
    });
    return result;
  }

  /** Creates a fork (in the application's `transaction`, if given); the loop wakes when it is new and outside a transaction. */
  async createFork(fork: WorkflowFork, transaction?: unknown): Promise<CreatedInstance> {
    const result = await this.options.storage.fork(fork, transaction);
    if (result.created && transaction === undefined) this.options.wakeUps.kick();
    return result;
  }

  /**
   * A local start leases its instance without a claim, so it must honour a stored pause of its
   * workflow as a claim does. Read after the create: a pause stored before it is seen here, and the
   * instance is handed back unrun (it waits, as the starts of a paused workflow do); one stored
   * after it came after this lease, like a pause of a workflow whose instances already run.
   */
  private async handedBackWhilePaused(instance: WorkflowInstance, token: string): Promise<boolean> {
    const { storage, clock } = this.options;
    let pauses: WorkflowPausedWorkflow[];
    try {
      pauses = await storage.pausedWorkflows();
    } catch {
      return false; // the store is away: the instance runs as created, its writes fenced as ever
    }
    const paused = pauses.some(
      (p) => p.workflow === instance.workflow && (p.version === null || p.version === instance.version),
    );
    if (!paused) return false;
    await storage.write(instance.id, token, {
      now: clock.now(),
      entries: [],
      status: 'pending',
      release: { wakeAt: instance.wakeAt, waits: [], signalCursor: instance.signalCursor },
    });
    return true;
  }

  /** Stores a signal (in the application's `transaction`, if given); the loop wakes when it woke a wait (at once: not in a transaction). */
  async signal(signal: NewWorkflowSignal, transaction?: unknown): Promise<WorkflowSignalResult> {
    const { storage, wakeUps } = this.options;
    if (transaction !== undefined) return storage.signalInTransaction(transaction, signal);
    const result = await storage.signal(signal);
    if (result.woken > 0) wakeUps.kick();
    return result;
  }

  /** Stores a cancel or terminate of `id`; once accepted, an execution of it running here stops now. Resolves to whether it was accepted. */
  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const accepted = await this.options.storage.requestCancel(id, request);
    if (accepted) this.cancelAccepted(id, request.terminate);
    return accepted;
  }

  /**
   * Stores a pause of `id` (in `transaction`, the application's, when given); once accepted, an
   * execution of it running here stops at its next step and hands it back. Resolves to whether it
   * was accepted.
   */
  async pause(id: string, request: WorkflowPauseRequest, transaction?: unknown): Promise<boolean> {
    const accepted = await this.options.storage.pause(id, request, transaction);
    if (accepted) this.options.engine.claims.pauseAccepted(id);
    return accepted;
  }

  /** Lifts the pause of `id`; once accepted, the loop looks for work (what fell due meanwhile is due now). */
  async resume(id: string, now: number, transaction?: unknown): Promise<boolean> {
    const accepted = await this.options.storage.resume(id, now, transaction);
    if (accepted) this.options.wakeUps.kick();
    return accepted;
  }

  /**
   * One page of a bulk action (`WorkflowStorage.changeMany()`), resolving to the ids it changed.
   * Outside a transaction, what it accepted acts here at once as the single calls do (an execution
   * running here stops, the loop looks for work); in the application's `transaction` nothing acts
   * before the commit, whose notices reach every process (this one included).
   */
  async changeMany(ids: readonly string[], change: WorkflowBulkChange, transaction?: unknown): Promise<string[]> {
    const changed = await this.options.storage.changeMany(ids, change, transaction);
    if (transaction !== undefined || changed.length === 0) return changed;
    const { claims } = this.options.engine;
    for (const id of changed) {
      if (change.kind === 'cancel') claims.cancelAccepted(id, change.request.terminate);
      else if (change.kind === 'pause') claims.pauseAccepted(id);
    }
    this.options.wakeUps.kick();
    return changed;
  }

  /** Stores a pause of a workflow (version): from when it resolves, no process claims its instances. */
  pauseWorkflow(target: WorkflowPauseTarget, request: WorkflowPauseRequest, transaction?: unknown): Promise<boolean> {
    return this.options.storage.pauseWorkflow(target, request, transaction);
  }

  /** Lifts a stored pause of a workflow (version); once accepted, the loop looks for work. */
  async resumeWorkflow(target: WorkflowPauseTarget, transaction?: unknown): Promise<boolean> {
    const accepted = await this.options.storage.resumeWorkflow(target, transaction);
    if (accepted) this.options.wakeUps.kick();
    return accepted;
  }

  /**
   * Reopens a failed, cancelled or compensation_failed instance for a run from where it stopped
   * (`retryInstance()`; `read` reads it with its journal), and wakes the loop.
   */
  async retry(id: string, read: () => Promise<WorkflowInstanceDetails>): Promise<void> {
    const { storage, clock, wakeUps } = this.options;
    await retryInstance(storage, id, read, () => clock.now());
    wakeUps.kick();
  }

  /**
   * While an execution of `id` runs in this process under its lease: resolves once it no longer
   * stands for the instance here (see `InstanceClaims.whileRunningHere()`); `null` when none does.
   */
  whileRunningHere(id: string): Promise<void> | null {
    return this.options.engine.claims.whileRunningHere(id);
  }

  /**
   * The store said a cancel or terminate of `id` was stored (in any process): an execution of it
   * here, or a claim of it not started yet, reads the flags now (its lease is renewed at once, not at
   * the next heartbeat; a claim still out reads them as it starts), and the loop looks for work, as
   * after any wake-up (the request made a suspended instance due).
   */
  private cancelStored(id: string): void {
    this.options.engine.claims.cancelStored(id);
    this.loop.renewNow(id);
    this.options.wakeUps.kick();
  }

  /** Looks for work now instead of at the next poll; `id` names the one instance made due, which the loop may then claim by id. */
  private kickLoop(id?: string): void {
    if (this.enabled) this.loop.kick(id);
  }

  /** The instances this loop holds leases of: those it runs, and those it claimed ahead. */
  private *heldIds(): Iterable<string> {
    for (const claimed of this.loop.active) yield claimed.instance.id;
    for (const claimed of this.loop.queued) yield claimed.instance.id;
  }

  /** A cancel or terminate accepted in this process: an execution running here stops now. */
  cancelAccepted(id: string, terminate: boolean): void {
    this.options.engine.claims.cancelAccepted(id, terminate);
  }
}
