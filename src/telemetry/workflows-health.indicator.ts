import { shownValue } from '../errors/shown-value.js';
import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import { parseDuration, type Duration } from '../time/duration.js';
import { WorkflowWorker } from '../worker/workflow-worker.service.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';

/** What `WorkflowsHealthIndicator.isHealthy()` checks, and how strictly. */
export interface WorkflowsHealthOptions {
  /** The key of the result. Default `'workflows'`. */
  key?: string;
  /** How long the store may take to answer. Default `'3s'`. */
  timeout?: Duration;
  /**
   * Down when the worker loop has not claimed for longer than this while it has free slots (an
   * idle loop claims every `pollInterval`; a loop whose slots are all busy is alive). Default: 3
   * poll intervals, at least `'30s'`. `false`: don't check the worker. A process whose worker is
   * disabled (`worker: false`) is never checked.
   */
  maxClaimAge?: Duration | false;
  /**
   * Down when more instances than this are due now and held by no worker (a backlog the workers
   * don't keep up with). Default 1,000. `false`: don't check. A store without `countDue()`
   * reports no backlog.
   */
  maxDueBacklog?: number | false;
}

/** A read by key that finds nothing: proves the store answers when it can't count its backlog. */
const BACKLOG_PROBE_ID = '$nest-workflows:health-probe';

/**
 * A `@nestjs/terminus` health indicator for the workflows of this process: the store answers (in
 * time), the worker loop is alive (it claimed recently, or all its slots are busy), and the due
 * backlog is under a threshold. Add it to the providers of the module that imports `TerminusModule`.
 *
 * @example
 * check() { return this.health.check([() => this.workflows.isHealthy({ maxDueBacklog: 500 })]); }
 */
@Injectable()
export class WorkflowsHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly storage: WorkflowStorage,
    private readonly worker: WorkflowWorker,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly options: ResolvedWorkflowsOptions,
  ) {}

  async isHealthy(options: WorkflowsHealthOptions = {}): Promise<HealthIndicatorResult> {
    const indicator = this.health.check(options.key ?? 'workflows');
    const timeout = parseDuration(options.timeout ?? '3s', 'WorkflowsHealthIndicator option "timeout"');
    const maxBacklog = options.maxDueBacklog ?? 1_000;
    if (maxBacklog !== false && (!Number.isInteger(maxBacklog) || maxBacklog < 0)) {
      throw new TypeError(
        `Invalid WorkflowsHealthIndicator option "maxDueBacklog": ${shownValue(maxBacklog)}. Use a whole number, 0 or more, or false.`,
      );
    }
    const { clock, worker: settings } = this.options;
    const maxClaimAge =
      options.maxClaimAge === false
        ? null
        : options.maxClaimAge === undefined
          ? Math.max(30_000, 3 * settings.pollInterval)
          : parseDuration(options.maxClaimAge, 'WorkflowsHealthIndicator option "maxClaimAge"');
    const problems: string[] = [];
    const details: Record<string, unknown> = {};

    // The store: one indexed count, one past the threshold at most (or a read by key when it can't count), in time.
    const started = performance.now();
    try {
      const now = clock.now();
      const backlog = await withTimeout(
        (async () =>
          (await this.storage.countDue(now, maxBacklog === false ? 1 : maxBacklog + 1)) ??
          (await this.storage.get(BACKLOG_PROBE_ID), null))(),
        timeout,
      );
      details.store = { status: 'up', responseTimeMs: Math.round(performance.now() - started) };
      if (backlog !== null && maxBacklog !== false) {
        details.dueBacklog = backlog > maxBacklog ? `more than ${maxBacklog}` : backlog;
        if (backlog > maxBacklog) problems.push(`more than ${maxBacklog} instances are due and unclaimed`);
      }
    } catch (error) {
      details.store = { status: 'down', error: error instanceof Error ? error.message : String(error) };
      problems.push('the store did not answer');
    }

    // The worker loop.
    if (!settings.enabled) {
      details.worker = { status: 'disabled' };
    } else if (maxClaimAge !== null) {
      const loop = this.worker.loopStatus();
      const age = loop.lastClaimAt === null ? null : clock.now() - loop.lastClaimAt;
      const busy = loop.executing >= settings.concurrency;
      const alive = loop.running && (busy || (age !== null && age <= maxClaimAge));
      details.worker = {
        status: alive ? 'up' : 'down',
        running: loop.running,
        executing: loop.executing,
        lastClaimAt: loop.lastClaimAt === null ? null : new Date(loop.lastClaimAt).toISOString(),
      };
      if (!loop.running) problems.push('the worker loop is not running');
      else if (!alive)
        problems.push(
          age === null
            ? 'the worker loop has not claimed yet'
            : `the worker loop last claimed ${Math.round(age / 1000)} s ago`,
        );
    }

    // Shown, never down (no restart of this process helps): instances of versions no process declares.
    const { undeclaredDue } = this.worker.loopStatus();
    if (undeclaredDue.length > 0) details.undeclaredDue = undeclaredDue;

    return problems.length > 0
      ? indicator.down({ ...details, message: `${problems.join('; ')}.` })
      : indicator.up(details);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
