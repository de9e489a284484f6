import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { WorkflowEngine, type ClaimedInstance } from '../engine/workflow-engine.js';
import { WorkflowEvents } from '../events/workflow-events.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import { isObservableClock } from '../time/workflow-clock.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { LeasedWorker, type Lease } from './leased-worker.js';

/**
 * Claims due instances under a lease, executes them and records their outcome. Any number of
 * processes may run one against the same store. Inject it for `drain()`, which runs everything
 * due now (tests with `worker: false` and a `ManualWorkflowClock`, scripts).
 */
@Injectable()
export class WorkflowWorker implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Workflows');
  private readonly loop: LeasedWorker<ClaimedInstance>;
  private readonly engine: WorkflowEngine;
  private readonly enabled: boolean;
  private stopClockListener: (() => void) | null = null;
  private stopListening: (() => Promise<void>) | null = null;

  constructor(
    storage: WorkflowStorage,
    private readonly registry: WorkflowRegistry,
    events: WorkflowEvents,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly options: ResolvedWorkflowsOptions,
  ) {
    const { worker, clock } = options;
    this.enabled = worker.enabled;
    this.engine = new WorkflowEngine({
      store: storage.store,
      registry,
      clock,
      journalLimits: options.journal,
      logger: {
        warn: (message) => this.logger.warn(message),
        error: (message, error) => this.logger.error(message, error instanceof Error ? error.stack : error),
      },
      emit: (event) => events.emit(event),
      kick: () => this.kick(),
    });
    this.loop = new LeasedWorker<ClaimedInstance>({
      owner: worker.id,
      concurrency: worker.concurrency,
      pollInterval: worker.pollInterval,
      leaseDuration: worker.leaseDuration,
      heartbeatInterval: worker.heartbeatInterval,
      shutdownTimeout: worker.shutdownTimeout,
      clock,
      claim: (lease, limit) => this.engine.claim(lease, limit),
      renew: (claimed, until) => this.engine.renew(claimed, until),
      execute: (claimed, shutdown) => this.engine.execute(claimed, shutdown),
      onError: (error, stage) =>
        this.logger.error(stage === 'claim' ? 'Claiming workflow instances failed.' : 'Renewing a lease failed.', error instanceof Error ? error.stack : error),
    });
    this.storage = storage;
  }

  private readonly storage: WorkflowStorage;

  /** This worker's id, shown as `leaseOwner`. */
  get id(): string {
    return this.loop.owner;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    const { clock } = this.options;
    if (isObservableClock(clock)) this.stopClockListener = clock.onAdvance(() => this.kick());
    if (this.storage.store.listen) {
      try {
        this.stopListening = await this.storage.store.listen(() => this.kick());
      } catch (error) {
        this.logger.warn(`Listening for wake-ups failed; polling every ${this.options.worker.pollInterval} ms instead. ${String(error)}`);
      }
    }
    this.loop.start();
  }

  /** Stops claiming and lets running executions hand back (up to `worker.shutdownTimeout`). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.shutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.shutdown();
  }

  /**
   * Runs every instance due at the clock's current time, again and again until none is left
   * (children started and parents they wake included); resolves to the number of executions.
   */
  drain(options: { limit?: number } = {}): Promise<number> {
    return this.loop.drain(options);
  }

  /** @internal Looks for work now instead of at the next poll (a local start, signal or cancel). */
  kick(): void {
    if (this.enabled) this.loop.kick();
  }

  /**
   * @internal A lease for an instance `WorkflowClient.start()` is about to create, so this process
   * runs it at once without a claim: when the background loop runs, a slot is free, and the
   * workflow has no concurrency or rate limit (those are counted by claims).
   */
  reserveStart(workflow: string): Lease | null {
    if (!this.enabled || this.registry.isLimited(workflow)) return null;
    return this.loop.reserve();
  }

  /** @internal Runs an instance created under `reserveStart()`'s lease. */
  runStarted(instance: WorkflowInstance, lease: Lease): void {
    this.loop.adopt({ instance: { ...instance, leaseToken: lease.token }, signalCursor: instance.signalCursor });
  }

  /** @internal The reserved start did not create an instance (it existed, or the store failed). */
  releaseStart(): void {
    this.loop.unreserve();
  }

  /** @internal A cancel or terminate accepted in this process: an execution running here stops now. */
  noticeCancel(id: string, terminate: boolean): void {
    this.engine.noticeCancel(id, terminate);
  }

  private stopped: Promise<void> | null = null;

  private shutdown(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopClockListener?.();
      await this.loop.shutdown();
      await this.stopListening?.().catch(() => undefined);
    })();
    return this.stopped;
  }
}
