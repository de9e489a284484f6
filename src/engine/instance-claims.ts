import type { WorkflowLease } from '../storage/workflow-lease.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowConcurrencyLimit, WorkflowRateLimitRule } from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { abandonClaimed, type ClaimedInstance } from './claimed-instance.js';
import { LocalExecutions } from './local-executions.js';
import { UnstartedClaims } from './unstarted-claims.js';
import type { WorkflowExecution } from './workflow-execution.js';
import type { WorkflowObserver } from './workflow-observer.js';

/** What the claims need of the engine's options. */
export interface InstanceClaimsOptions {
  storage: WorkflowStorage;
  registry: {
    versions(): Array<{ name: string; version: number }>;
    limits(): WorkflowConcurrencyLimit[];
    rateLimits(): WorkflowRateLimitRule[];
  };
  clock: WorkflowClock;
  logger: { warn(message: string): void; error(message: string, error?: unknown): void };
  onStoreError?(error: unknown, during: string): void;
  /** Look for due work now (a cancel was accepted). */
  kick(): void;
}

/**
 * The engine's hold on the instances it leases: claims them, renews their leases (handing each
 * execution the cancel or terminate a renewal reads), passes on the cancel notices of this process
 * and of the store, and lets go of what shutdown stopped waiting for. It knows the executions
 * running here and the claims not started yet, which a notice must reach either way.
 */
export class InstanceClaims {
  private readonly running = new LocalExecutions();
  private readonly unstarted = new UnstartedClaims();

  constructor(
    private readonly options: InstanceClaimsOptions,
    private readonly observer: WorkflowObserver,
  ) {}

  /**
   * Leases up to `limit` due instances of the workflows this process runs, granted at `now`; with
   * `ids` (named by a notification), the store may take just those (see `WorkflowClaimRequest.ids`).
   */
  claim(lease: WorkflowLease, now: number, limit: number, ids?: string[]): Promise<ClaimedInstance[]> {
    const workflows = this.options.registry.versions();
    return workflows.length === 0
      ? Promise.resolve([])
      : this.unstarted.claim(() => this.claimNow(workflows, lease, now, limit, ids));
  }

  private async claimNow(
    workflows: Array<{ name: string; version: number }>,
    lease: WorkflowLease,
    now: number,
    limit: number,
    ids?: string[],
  ): Promise<ClaimedInstance[]> {
    const { registry, storage } = this.options;
    const { instances, lastSignalId } = await storage.claim({
      ...lease,
      now,
      limit,
      workflows,
      limits: registry.limits(),
      rateLimits: registry.rateLimits(),
      ...(ids === undefined ? {} : { ids }),
    });
    this.observer.claimed(instances, now);
    return instances.map((instance) => ({
      // The store returns each instance with the new lease on it: copied only if it doesn't say so.
      instance: instance.leaseToken === lease.token ? instance : { ...instance, leaseToken: lease.token },
      signalCursor: lastSignalId,
      leaseUntil: lease.leaseUntil,
    }));
  }

  /** Extends the lease; hands the execution any cancel or terminate it reads. `false`: the lease is gone. */
  async renew(claimed: ClaimedInstance, until: number): Promise<boolean> {
    const flags = await this.options.storage.renew(claimed.instance.id, claimed.instance.leaseToken!, until);
    if (flags !== null && !claimed.released) claimed.leaseUntil = until;
    const exec = claimed.exec;
    if (!exec) {
      this.unstarted.renewed(claimed, flags);
      return flags !== null;
    }
    if (flags === null) exec.interrupt('lease-lost');
    else if (flags.terminateRequested) exec.interrupt('terminate');
    else if (flags.cancelRequested && !exec.replayOnly) exec.interrupt('cancel');
    // Compensations (replay-only) run on to their end: a pause stops workflow code at its next step.
    else if (flags.paused && !exec.replayOnly) exec.interrupt('pause');
    else if (
      !exec.replayOnly &&
      claimed.instance.deadline !== null &&
      this.options.clock.now() >= claimed.instance.deadline
    ) {
      // The run deadline passed while something runs (a long step): like a cancel, the step sees
      // ctx.signal, and the instance compensates and fails with WorkflowTimeoutError.
      exec.interrupt('timeout');
    }
    return flags !== null;
  }

  /** Shutdown stopped waiting for `claimed` (see `abandonClaimed()`): its code may still run, but another process may now end it. */
  abandon(claimed: ClaimedInstance): Promise<void> {
    this.running.release(claimed.instance.id);
    return abandonClaimed(this.options, claimed);
  }

  /** While an execution of `id` runs here under its lease: resolves once it stops standing for it (`LocalExecutions.whileRunning()`). */
  whileRunningHere(id: string): Promise<void> | null {
    return this.running.whileRunning(id);
  }

  /** A cancel or terminate accepted in this process: an execution running here stops at once. */
  cancelAccepted(id: string, terminate: boolean): void {
    const exec = this.running.get(id);
    if (exec && (terminate || !exec.replayOnly)) exec.interrupt(terminate ? 'terminate' : 'cancel');
    this.unstarted.cancelAccepted(id);
    this.options.kick();
  }

  /** A pause of `id` accepted in this process: an execution running here stops at its next step and hands it back. */
  pauseAccepted(id: string): void {
    const exec = this.running.get(id);
    if (exec && !exec.replayOnly) exec.interrupt('pause');
    this.unstarted.cancelAccepted(id);
  }

  /** The store said a cancel or terminate of `id` was stored: a claim still out reads the flags again at its start (`UnstartedClaims.cancelStored()`). */
  cancelStored(id: string): void {
    this.unstarted.cancelStored(id);
  }

  /** The store said a cancel or terminate of some instance was stored, not which: the claims still out read the flags again at their start (`UnstartedClaims.someCancelStored()`). */
  someCancelStored(): void {
    this.unstarted.someCancelStored();
  }

  /**
   * The execution of `claimed` runs from here, under `shutdown`: a notice reaches it itself (call it
   * in the same turn as the read of its start, so that none falls between).
   */
  executionStarted(claimed: ClaimedInstance, exec: WorkflowExecution, shutdown: AbortSignal): void {
    claimed.exec = exec;
    this.running.add(exec);
    this.unstarted.started(claimed);
    this.running.hearShutdown(shutdown);
  }

  /** The execution of `claimed` ended, or never started (`exec` undefined). */
  executionEnded(claimed: ClaimedInstance, exec: WorkflowExecution | undefined): void {
    this.unstarted.started(claimed);
    if (exec) this.running.delete(exec);
  }
}
