import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { DRAIN_BEFORE_INIT, WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowRuntime, type WorkflowLoopStatus } from '../runtime/workflow-runtime.js';
import { WorkflowSchedulerService } from '../scheduler/workflow-scheduler.service.js';

/**
 * Claims due instances under a lease, executes them and records their outcome. Any number of
 * processes may run one against the same store. Inject it for `drain()`, which runs everything
 * due now (tests with `worker: false` and a `ManualWorkflowClock`, scripts).
 *
 * The application's lifecycle for the runtime: starts its background loop at bootstrap, stops
 * claiming and drains at shutdown.
 */
@Injectable()
export class WorkflowWorker implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly runtime: WorkflowRuntime,
    private readonly scheduler: WorkflowSchedulerService,
    private readonly registry: WorkflowRegistry,
  ) {}

  /** This worker's id, shown as `leaseOwner`. */
  get id(): string {
    return this.runtime.id;
  }

  /** Whether the background loop runs, when it last claimed, and how much it runs now (health checks use it). */
  loopStatus(): WorkflowLoopStatus {
    return this.runtime.loopStatus();
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.runtime.start();
    // After the loop started: the check reads only, and a slow store must not hold the start back.
    void this.runtime.checkReplays(this.registry);
  }

  /**
   * Stops the scheduler (no new occurrence starts; its schedules are handed back), then stops
   * claiming and lets running executions hand back (up to `worker.shutdownTimeout`).
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.scheduler.stop();
    await this.runtime.shutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.scheduler.stop();
    await this.runtime.shutdown();
  }

  /**
   * Runs every instance and starts every schedule occurrence due at the clock's current time,
   * again and again until nothing is left (children started and parents they wake included);
   * resolves to the number of executions. Throws `WorkflowInvalidStateError` before the
   * application's `init()` (nothing is registered then, so it would quietly run nothing).
   */
  async drain(options: { limit?: number } = {}): Promise<number> {
    if (!this.registry.isCollected) throw new WorkflowInvalidStateError(DRAIN_BEFORE_INIT);
    const limit = options.limit ?? Infinity;
    let executed = 0;
    for (;;) {
      const started = await this.scheduler.drain();
      const ran = executed < limit ? await this.runtime.drain({ limit: limit - executed }) : 0;
      executed += ran;
      if (started === 0 && ran === 0) return executed;
      if (executed >= limit) return executed;
    }
  }
}
