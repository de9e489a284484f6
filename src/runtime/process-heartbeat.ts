import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowDeclaredVersion, WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import type { StoreOutage } from './store-outage.js';

/** How often a worker process records itself in the store (ms, real time). */
export const PROCESS_BEAT_INTERVAL = 15_000;
/**
 * A process not seen for this long (ms, by the clock that reads) is stale: crashed, killed or cut
 * off. Four beats, so a slow store or a busy event loop never makes a live process look gone, and
 * clocks of different hosts may differ by most of it.
 */
export const PROCESS_STALE_AFTER = 4 * PROCESS_BEAT_INTERVAL;

export interface ProcessHeartbeatOptions {
  storage: WorkflowStorage;
  clock: WorkflowClock;
  /** The worker id (`leaseOwner`). */
  owner: string;
  /** The workflow versions this process declares, read at every beat. */
  declared(): Array<{ name: string; version: number }>;
  outage: StoreOutage;
}

/**
 * A worker process's record in the store (`WorkflowProcessStore`): written when the worker starts,
 * again every `PROCESS_BEAT_INTERVAL` (each beat also removes the rows stale for
 * `PROCESS_STALE_AFTER`: the processes that crashed), and removed at shutdown. One beat is out at
 * a time, and the removal waits for it: a beat landing after the removal would bring the row back.
 * A failed beat is reported as a store failure and tried again at the next one; nothing else
 * depends on it.
 */
export class ProcessHeartbeat {
  private readonly id = randomUUID();
  private readonly startedAt: number;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: ProcessHeartbeatOptions) {
    this.startedAt = options.clock.now();
  }

  /** Records the process now and starts the heartbeat; resolves once the first record settled (it never rejects). */
  start(): Promise<void> {
    if (this.stopped || this.timer) return this.beating ?? Promise.resolve();
    this.timer = setInterval(() => void this.beat(), PROCESS_BEAT_INTERVAL);
    this.timer.unref();
    return this.beat();
  }

  /** Records the process now, unless a beat is out (a manual clock moved: others read this record by it). */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.beating ??= this.record().finally(() => (this.beating = null));
    return this.beating;
  }

  /** Stops the heartbeat and removes the record, after any beat that is out. Safe to call twice; never rejects. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    const started = this.timer !== null;
    this.timer = null;
    await this.beating;
    if (!started) return;
    try {
      await this.options.storage.removeProcess(this.id);
    } catch {
      // Left behind, the row goes stale and the next process that records itself removes it.
    }
  }

  private async record(): Promise<void> {
    const { storage, clock, owner, outage } = this.options;
    const now = clock.now();
    const record: WorkflowProcessRecord = {
      id: this.id,
      owner,
      host: hostname(),
      pid: process.pid,
      declared: declaredVersions(this.options.declared()),
      startedAt: this.startedAt,
      seenAt: now,
    };
    try {
      await storage.recordProcess(record, now - PROCESS_STALE_AFTER);
    } catch (error) {
      outage.failed(error, 'recording this process');
    }
  }
}

/** The registry's versions as a record holds them: by workflow name, then version. */
function declaredVersions(versions: Array<{ name: string; version: number }>): WorkflowDeclaredVersion[] {
  return versions
    .map(({ name, version }) => ({ workflow: name, version }))
    .sort((a, b) => (a.workflow === b.workflow ? a.version - b.version : a.workflow < b.workflow ? -1 : 1));
}
