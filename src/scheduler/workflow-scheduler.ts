import { randomUUID } from 'node:crypto';
import type { WorkflowScheduleStorage } from '../storage/workflow-schedule-storage.js';
import type { WorkflowScheduleRecord } from '../storage/workflow-store.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import type { DeclaredSchedule } from './declared-schedule.js';
import { missedAfterFor, planOccurrences } from './occurrence-plan.js';
import { cadenceOf } from './schedule-cadence.js';
import { reconcileSchedules, type ReconcileResult } from './schedule-reconciler.js';
import { readScheduleSpec } from './schedule-spec.js';
import { readScheduleState, type ScheduleState } from './schedule-state.js';
import { startOccurrence, type ScheduledWorkflow, type ScheduleStartDeps } from './schedule-starts.js';

/** The store operations the scheduler uses (`WorkflowStorage` has them). */
export type SchedulerStorage = ScheduleStartDeps['storage'] & {
  readonly schedules: Pick<
    WorkflowScheduleStorage,
    'claimSchedules' | 'writeSchedule' | 'getSchedule' | 'listSchedules' | 'saveSchedule' | 'deleteSchedule'
  >;
};

export interface WorkflowSchedulerOptions extends Omit<ScheduleStartDeps, 'storage'> {
  storage: SchedulerStorage;
  /** The workflows this process runs: their schedules are the ones it claims, their declared ones it reconciles. */
  workflows: {
    names(): string[];
    newest(name: string): ScheduledWorkflow | undefined;
    declaredSchedules(): DeclaredSchedule[];
  };
  clock: WorkflowClock;
  /** Shown as the schedules' `leaseOwner`. */
  owner: string;
  /** How long a claimed schedule stays leased without a write: a crashed process's schedules are taken over after it. */
  leaseDuration: number;
  /** How often the background loop looks for due schedules. */
  pollInterval: number;
  logger: { error(message: string, error?: unknown): void };
}

/** A schedule whose lease this process keeps between occurrences, to start each one on time. */
interface HeldSchedule {
  token: string;
  wakeAt: number;
  state: ScheduleState;
}

/** How many schedules one claim leases. */
const CLAIM_BATCH = 20;

/**
 * Produces the occurrences of the schedules: claims due schedules under a lease (several
 * processes may run one on the same store; two never hold one schedule), starts each due
 * occurrence's instance, and records how far it got with a write fenced by the lease token.
 *
 * A schedule whose next occurrence comes within half a lease stays leased here (each write
 * extends the lease), so a frequent schedule is served by one process, on time, by a timer; one
 * whose next occurrence is further away is handed back, and whichever process claims it when it
 * is due starts it. A process that dies keeps its schedules only until their leases lapse.
 * Framework-free: `WorkflowSchedulerService` runs it with the application.
 */
export class WorkflowScheduler {
  private readonly held = new Map<string, HeldSchedule>();
  /** Passes never overlap (the background loop and `drain()` take turns). */
  private turn: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly options: WorkflowSchedulerOptions) {}

  /**
   * Makes the store's declared schedules what this process's workflows declare (see
   * `reconcileSchedules`); resolves to what changed.
   */
  reconcile(): Promise<ReconcileResult> {
    const { storage, workflows, clock, leaseDuration } = this.options;
    return reconcileSchedules(
      storage.schedules,
      workflows.declaredSchedules(),
      workflows.names(),
      clock.now(),
      missedAfterFor(leaseDuration),
    );
  }

  /** Starts the background loop. */
  start(): void {
    if (this.loop || this.stopped) return;
    this.loop = this.run();
  }

  /** Looks for due schedules now instead of at the next poll. */
  kick(): void {
    this.wake?.();
  }

  /**
   * Starts every occurrence due at the clock's current time, again and again until none is due;
   * resolves to the number of instances started. For tests (with a `ManualWorkflowClock`) and
   * scripts; schedules are handed back after each pass.
   */
  async drain(): Promise<number> {
    if (this.stopped) return 0;
    return this.inTurn(async () => {
      let started = 0;
      for (;;) {
        const passed = await this.pass(false);
        started += passed.started;
        if (passed.schedules === 0) return started;
      }
    });
  }

  /** Stops the loop, waits for a pass under way, and hands back the schedules it holds. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return this.loop ?? undefined;
    this.stopped = true;
    this.wake?.();
    await this.loop;
    await this.inTurn(async () => {
      const now = this.options.clock.now();
      for (const [id, held] of this.held) {
        await this.options.storage.schedules
          .writeSchedule(id, held.token, { now, state: held.state, wakeAt: held.wakeAt, release: true })
          .catch((error) =>
            this.options.logger.error(
              `Handing back schedule "${id}" failed; it is taken over when its lease lapses.`,
              error,
            ),
          );
      }
      this.held.clear();
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const next = this.turn.then(work);
    this.turn = next.catch(() => undefined);
    return next;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.inTurn(() => this.pass(true));
      } catch (error) {
        this.options.logger.error('Starting schedule occurrences failed.', error);
      }
      if (this.stopped) return;
      const now = this.options.clock.now();
      let delay = this.options.pollInterval;
      for (const held of this.held.values()) delay = Math.min(delay, held.wakeAt - now);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, delay));
        this.wake = done;
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
      this.wake = null;
    }
  }

  /** Serves the held schedules that are due, then claims and serves the due ones nobody holds. */
  private async pass(hold: boolean): Promise<{ schedules: number; started: number }> {
    const { storage, clock, owner, leaseDuration } = this.options;
    let schedules = 0;
    let started = 0;
    for (const [id, held] of [...this.held]) {
      if (held.wakeAt > clock.now()) continue;
      this.held.delete(id);
      // Read it again: a change or pause since the last write released the lease (and the token no longer matches).
      const record = await storage.schedules.getSchedule(id);
      if (!record || record.leaseToken !== held.token) continue;
      schedules++;
      started += await this.serve(record, held.token, hold);
    }
    const workflows = this.options.workflows.names();
    if (workflows.length === 0) return { schedules, started };
    for (;;) {
      const now = clock.now();
      const token = randomUUID();
      const claimed = await storage.schedules.claimSchedules({
        owner,
        token,
        now,
        leaseUntil: now + leaseDuration,
        limit: CLAIM_BATCH,
        workflows,
      });
      for (const record of claimed) started += await this.serve(record, token, hold);
      schedules += claimed.length;
      if (claimed.length < CLAIM_BATCH || this.stopped) return { schedules, started };
    }
  }

  /** Starts a leased schedule's due occurrences and records them; returns how many instances it started. */
  private async serve(record: WorkflowScheduleRecord, token: string, hold: boolean): Promise<number> {
    const { storage, clock, leaseDuration, logger } = this.options;
    const now = clock.now();
    const state = readScheduleState(record.state, record.createdAt);
    let spec;
    try {
      spec = readScheduleSpec(record.spec, record.id);
    } catch (error) {
      logger.error(
        `Schedule "${record.id}" is parked: its stored spec can't be read. Save it again with WorkflowSchedules.upsert().`,
        error,
      );
      const parked = { ...state, error: error instanceof Error ? error.message : String(error) };
      await storage.schedules.writeSchedule(record.id, token, { now, state: parked, wakeAt: null, release: true });
      return 0;
    }
    const workflow = this.options.workflows.newest(record.workflow);
    if (!workflow) {
      // Claims only ask for workflows this process runs; hand it back untouched for one that does.
      await storage.schedules.writeSchedule(record.id, token, { now, state, wakeAt: record.wakeAt, release: true });
      return 0;
    }
    const plan = planOccurrences({
      cadence: cadenceOf(spec),
      cursor: state.cursor,
      now,
      catchup: spec.catchup,
      catchupWindow: spec.catchupWindow,
      missedAfter: missedAfterFor(leaseDuration),
    });
    if (plan.missed) {
      this.options.emit({
        type: 'schedule-caught-up',
        scheduleId: record.id,
        workflow: record.workflow,
        at: now,
        catchup: spec.catchup,
        missedFrom: plan.missed.first,
        missedTo: plan.missed.last,
        started: plan.missed.started,
      });
    }
    let started = 0;
    // What an earlier cadence owed when the schedule changed comes first, then the cadence's own.
    for (const at of [...state.owed, ...plan.fire]) {
      const outcome = await startOccurrence(this.options, {
        scheduleId: record.id,
        workflow,
        input: record.input,
        at,
        overlap: spec.overlap,
        triggered: false,
        leaseToken: token,
      });
      // A pause, change or delete released the lease (or another process took it over): what this
      // pass read is stale, and its write would not land. The next claim starts from the store.
      if (outcome.kind === 'lost') return started;
      if (outcome.kind !== 'skipped') {
        state.lastStartedId = outcome.id;
        state.lastStartedAt = at;
      }
      if (outcome.kind === 'started') started++;
    }
    state.cursor = plan.cursor;
    state.owed = [];
    state.error = null;
    const written = clock.now();
    const keep = hold && !this.stopped && plan.next !== null && plan.next - written <= leaseDuration / 2;
    const landed = await storage.schedules.writeSchedule(record.id, token, {
      now: written,
      state,
      wakeAt: plan.next,
      release: !keep,
      ...(keep ? { leaseUntil: written + leaseDuration } : {}),
    });
    if (landed && keep) this.held.set(record.id, { token, wakeAt: plan.next!, state });
    return started;
  }
}
