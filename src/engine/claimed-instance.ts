import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { reportStoreError } from './execution-reports.js';
import type { WorkflowExecution } from './workflow-execution.js';

/** A claimed instance, and its execution once it started. */
export interface ClaimedInstance {
  instance: WorkflowInstance;
  signalCursor: number;
  exec?: WorkflowExecution;
  /**
   * When the lease ends, as this process last set it (the claim, then each renewal): before every
   * side effect the execution checks it by the local clock, with a margin.
   */
  leaseUntil?: number;
  /** Shutdown released the lease while the execution still ran (`abandon()`): nothing more is recorded or reported. */
  released?: boolean;
  /** The worker's: this execution's own work is over, only its last write is left; its slot may go to the next item. */
  ending?: () => void;
  /** Cancels and terminates noticed before the execution started (see `UnstartedClaims`): its start reads the flags again. */
  cancelsSinceClaim?: number;
}

/** The local lease check's margin: a tenth of the lease, at most a second. */
export function leaseMargin(leaseUntil: number, now: number): number {
  return Math.min(1_000, Math.max(0, (leaseUntil - now) / 10));
}

/** What `abandonClaimed()` needs of the engine. */
interface AbandonDeps {
  storage: WorkflowStorage;
  clock: WorkflowClock;
  logger: { warn(message: string): void; error(message: string, error?: unknown): void };
  onStoreError?(error: unknown, during: string): void;
}

/**
 * Shutdown stopped waiting for `claimed` (`shutdownTimeout` passed): logs what still runs (id,
 * workflow, step), and releases the lease, due now, so another process takes the instance at once
 * instead of after the lease. From here its execution records nothing, reports nothing and starts
 * no new side effect (its local lease check fails).
 */
export async function abandonClaimed(deps: AbandonDeps, claimed: ClaimedInstance): Promise<void> {
  const { instance, exec } = claimed;
  claimed.released = true;
  claimed.leaseUntil = -Infinity;
  const steps = exec ? [...exec.runningSteps].map((name) => `"${name}"`) : [];
  deps.logger.warn(
    `Instance "${instance.id}" (${instance.workflow}@${instance.version}) was still running ` +
      `${steps.length > 0 ? `step ${steps.join(', ')}` : 'its workflow code'} when shutdownTimeout passed; its lease is released ` +
      'so another process takes it over now. What that code does from here is not recorded.',
  );
  const release = { wakeAt: deps.clock.now(), waits: [], signalCursor: claimed.signalCursor };
  try {
    if (exec) {
      await exec.write({ release });
      exec.close();
    } else {
      await deps.storage.write(instance.id, instance.leaseToken!, { now: deps.clock.now(), entries: [], release });
    }
  } catch (error) {
    reportStoreError(deps, error, `releasing "${instance.id}" at shutdown`);
  }
}
