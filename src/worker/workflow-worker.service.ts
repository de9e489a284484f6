import { Injectable, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { WorkflowRuntime } from '../runtime/workflow-runtime.js';

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
  constructor(private readonly runtime: WorkflowRuntime) {}

  /** This worker's id, shown as `leaseOwner`. */
  get id(): string {
    return this.runtime.id;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.runtime.start();
  }

  /** Stops claiming and lets running executions hand back (up to `worker.shutdownTimeout`). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.runtime.shutdown();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.runtime.shutdown();
  }

  /**
   * Runs every instance due at the clock's current time, again and again until none is left
   * (children started and parents they wake included); resolves to the number of executions.
   */
  drain(options: { limit?: number } = {}): Promise<number> {
    return this.runtime.drain(options);
  }
}
