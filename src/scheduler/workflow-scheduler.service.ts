import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { isObservableClock } from '../time/workflow-clock.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';
import { WorkflowScheduler } from './workflow-scheduler.js';

/**
 * The scheduler with the application: reconciles the declared schedules with the store at
 * bootstrap (every process, so the code deployed last is what the store holds), then runs the
 * background loop when the worker is enabled. `WorkflowWorker` stops it first at shutdown, and its
 * `drain()` takes turns with this one's.
 */
@Injectable()
export class WorkflowSchedulerService
  implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  private readonly logger = new Logger('Workflows');
  private stopClockListener: (() => void) | null = null;

  constructor(
    private readonly scheduler: WorkflowScheduler,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly options: ResolvedWorkflowsOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const result = await this.scheduler.reconcile();
    for (const [what, ids] of Object.entries(result)) {
      if (ids.length > 0) this.logger.log(`Declared schedules ${what}: ${ids.join(', ')}.`);
    }
    if (!this.options.worker.enabled) return;
    const { clock } = this.options;
    if (isObservableClock(clock)) this.stopClockListener = clock.onAdvance(() => this.scheduler.kick());
    this.scheduler.start();
  }

  /** Stops the loop and hands back the schedules it holds. Safe to call twice. */
  async stop(): Promise<void> {
    this.stopClockListener?.();
    this.stopClockListener = null;
    await this.scheduler.stop();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Starts every schedule occurrence due now; resolves to the number of instances started. */
  drain(): Promise<number> {
    return this.scheduler.drain();
  }
}
