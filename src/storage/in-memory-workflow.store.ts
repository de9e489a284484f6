import { IN_MEMORY_INPUT as INPUT } from './in-memory-key-limits.js';
import { selectClaims } from './claim-selection.js';
import { InMemorySignalLog } from './in-memory-signal-log.js';
import {
  FINISHED_STATUSES,
  UNFINISHED_STATUSES,
  type WorkflowInstance,
  type WorkflowJournalEntry,
  type WorkflowStatus,
  type WorkflowWait,
} from './workflow-instance.js';
import { listPage } from './in-memory-list.js';
import type {
  NewWorkflowInstance,
  NewWorkflowSignal,
  WorkflowCancelRequest,
  WorkflowClaim,
  WorkflowClaimRequest,
  WorkflowInstanceDetails,
  WorkflowLeaseFlags,
  WorkflowListQuery,
  WorkflowPurgeQuery,
  WorkflowPurgeResult,
  WorkflowReopen,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowStore,
  WorkflowWrite,
} from './workflow-store.js';

interface StoredInstance {
  instance: WorkflowInstance;
  waits: WorkflowWait[];
  /** By name; a `Map` keeps first-insertion order when an entry is replaced, which is the journal's order. */
  journal: Map<string, WorkflowJournalEntry>;
}

interface RateWindow {
  windowEnd: number;
  count: number;
}

const CANCELLABLE: ReadonlySet<WorkflowStatus> = new Set(['pending', 'running', 'suspended']);
const TERMINABLE: ReadonlySet<WorkflowStatus> = new Set(UNFINISHED_STATUSES);
const FINISHED: ReadonlySet<WorkflowStatus> = new Set(FINISHED_STATUSES);

/** Deep copy, so no caller ever holds a reference into the store's state (in or out). */
const copy = <T>(value: T): T => structuredClone(value);

/**
 * A `WorkflowStore` in the process's memory: the default for development and tests, and the
 * reference the contract suite is written against. Everything is lost when the process ends, so
 * it refuses production unless asked (see `WorkflowsModule`).
 *
 * Every method does all its reads and writes synchronously, with no `await` in between, so each
 * call is atomic on the event loop: that stands in for the row locks, the signal lock and the
 * conditional updates a SQL store needs (two claims can't both take an instance or the last slot,
 * a signal can't slip between a suspension's check and its release). Values are deep-copied in and
 * out, so mutating an argument or a result never changes what is stored.
 */
export class InMemoryWorkflowStore implements WorkflowStore {
  private readonly instances = new Map<string, StoredInstance>();
  private readonly signalLog = new InMemorySignalLog();
  /** Rate windows by workflow and rate-limit key (`null`: the workflow's own). */
  private readonly windows = new Map<string, RateWindow>();
  private readonly schedules = new Map<string, WorkflowScheduleRecord>();

  async create(init: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    INPUT.newInstance(init);
    const existing = this.instances.get(init.id);
    if (existing) return { instance: copy(existing.instance), created: false };
    const instance: WorkflowInstance = {
      id: init.id,
      workflow: init.workflow,
      version: init.version,
      status: init.lease ? 'running' : 'pending',
      input: copy(init.input),
      output: null,
      error: null,
      customStatus: null,
      parentId: init.parentId ?? null,
      parentClose: init.parentClose ?? null,
      concurrencyKey: init.concurrencyKey ?? null,
      rateLimitKey: init.rateLimitKey ?? null,
      priority: init.priority ?? 0,
      scheduleId: init.scheduleId ?? null,
      scheduledAt: init.scheduledAt ?? null,
      deadline: init.deadline,
      wakeAt: init.wakeAt ?? init.now,
      runs: init.lease ? 1 : 0,
      signalCursor: this.signalLog.last,
      leaseToken: init.lease?.token ?? null,
      leaseOwner: init.lease?.owner ?? null,
      leaseUntil: init.lease?.leaseUntil ?? null,
      cancelRequested: false,
      terminateRequested: false,
      cancelReason: null,
      createdAt: init.now,
      updatedAt: init.now,
    };
    this.instances.set(instance.id, { instance, waits: [], journal: new Map() });
    return { instance: copy(instance), created: true };
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const stored = this.instances.get(id);
    if (!stored) return null;
    const details: WorkflowInstanceDetails = { ...copy(stored.instance), waits: copy(stored.waits) };
    if (options?.journal) details.journal = copy([...stored.journal.values()]);
    return details;
  }

  async list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    return copy(listPage([...this.instances.values()].map((stored) => stored.instance), query));
  }

  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    const instance = this.instances.get(id)?.instance;
    if (!instance) return false;
    if (request.terminate) {
      if (!TERMINABLE.has(instance.status) || instance.terminateRequested) return false;
      instance.terminateRequested = true;
    } else if (!CANCELLABLE.has(instance.status) || instance.cancelRequested) {
      return false;
    }
    instance.cancelRequested = true;
    instance.cancelReason = request.reason;
    makeDue(instance, request.now);
    return true;
  }

  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    INPUT.entries(id, reopen.entries);
    const stored = this.instances.get(id);
    if (!stored) return false;
    const { instance } = stored;
    if (hasLiveLease(instance, reopen.now)) return false;
    if (instance.status !== reopen.expect.status || instance.runs !== reopen.expect.runs) return false;
    upsertEntries(stored, reopen.entries);
    instance.status = reopen.status;
    instance.error = copy(reopen.error);
    if (reopen.deadline !== undefined) instance.deadline = reopen.deadline;
    instance.cancelRequested = false;
    instance.terminateRequested = false;
    instance.cancelReason = null;
    // A lapsed token must not write again: the reopened run belongs to whoever claims it next.
    instance.leaseToken = null;
    instance.leaseUntil = null;
    instance.wakeAt = reopen.now;
    instance.updatedAt = reopen.now;
    return true;
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    const stored = this.instances.get(id);
    if (!stored || !statuses.includes(stored.instance.status)) return false;
    return this.instances.delete(id);
  }

  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    INPUT.signal(signal);
    return this.storeSignal(signal);
  }

  async signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    return copy(this.signalLog.find(query.name, query.key, query.afterId, query.upToId));
  }

  async purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    const { before, limit } = query;
    const statuses = new Set(query.statuses);

    // Unfinished instances stay whatever `statuses` says: a reopened one is running again.
    const instances = [...this.instances.values()]
      .map((stored) => stored.instance)
      .filter((i) => FINISHED.has(i.status) && statuses.has(i.status) && i.updatedAt < before)
      .sort((a, b) => a.updatedAt - b.updatedAt || compare(a.id, b.id))
      .slice(0, limit);
    for (const instance of instances) this.instances.delete(instance.id);

    // The newest signal stays so the last id never goes back (a new instance's cursor relies on it).
    const signals = this.signalLog.purge(before, limit);

    const windows = [...this.windows.entries()]
      .filter(([, window]) => window.windowEnd < before)
      .sort(([, a], [, b]) => a.windowEnd - b.windowEnd)
      .slice(0, limit);
    for (const [key] of windows) this.windows.delete(key);

    return { instances: instances.length, signals, rateLimits: windows.length };
  }

  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    INPUT.token(request.token, request.owner);
    const { now } = request;
    const versions = new Map<string, Set<number>>();
    for (const { name, version } of request.workflows) {
      versions.set(name, (versions.get(name) ?? new Set()).add(version));
    }
    const due: WorkflowInstance[] = [];
    for (const { instance } of this.instances.values()) {
      if (!TERMINABLE.has(instance.status) || instance.wakeAt === null || instance.wakeAt > now) continue;
      if (hasLiveLease(instance, now) || !versions.get(instance.workflow)?.has(instance.version)) continue;
      due.push(instance);
    }
    due.sort(
      (a, b) =>
        a.priority - b.priority || a.wakeAt! - b.wakeAt! || a.createdAt - b.createdAt || compare(a.id, b.id),
    );

    const { selected, windows } = selectClaims(due, request.limit, request, {
      leased: (workflow, key) => this.countLeased(workflow, key, now),
      windowCount: (workflow, key) => {
        const window = this.windows.get(windowKey(workflow, key));
        return window && window.windowEnd > now ? window.count : 0;
      },
    });
    for (const take of windows) {
      const key = windowKey(take.workflow, take.key);
      const window = this.windows.get(key);
      if (window && window.windowEnd > now) window.count += take.taken;
      else this.windows.set(key, { windowEnd: now + take.duration, count: take.taken });
    }
    for (const instance of selected) {
      instance.leaseToken = request.token;
      instance.leaseOwner = request.owner;
      instance.leaseUntil = request.leaseUntil;
      instance.runs += 1;
      instance.updatedAt = now;
      if (instance.status !== 'compensating') instance.status = 'running';
    }
    return { instances: copy(selected), lastSignalId: this.signalLog.last };
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    const instance = this.instances.get(id)?.instance;
    if (!instance || instance.leaseToken !== token) return null;
    instance.leaseUntil = leaseUntil;
    return { cancelRequested: instance.cancelRequested, terminateRequested: instance.terminateRequested };
  }

  async write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    const stored = this.instances.get(id);
    // Fencing: a worker whose lease was taken over (or ended) writes nothing, signal included.
    if (!stored || stored.instance.leaseToken !== token) return false;
    INPUT.write(id, write);
    const { instance } = stored;
    upsertEntries(stored, write.entries);

    let changed = false;
    if (write.status !== undefined) {
      instance.status = write.status;
      changed = true;
    }
    if (write.output !== undefined) {
      instance.output = copy(write.output);
      changed = true;
    }
    if (write.error !== undefined) {
      instance.error = copy(write.error);
      changed = true;
    }
    if (write.customStatus !== undefined) {
      instance.customStatus = copy(write.customStatus);
      changed = true;
    }
    if (write.signal) this.storeSignal(write.signal);

    const { release } = write;
    if (release) {
      stored.waits = copy(release.waits);
      instance.leaseToken = null;
      instance.leaseUntil = null;
      // A signal stored after the execution's cursor was never seen by it: without waking now,
      // the instance would sleep on a signal that already arrived.
      const wakeNow =
        (instance.cancelRequested && instance.status === 'suspended') ||
        release.waits.some((wait) => this.signalLog.hasAbove(wait.name, wait.key, release.signalCursor));
      instance.wakeAt = wakeNow ? write.now : release.wakeAt;
      changed = true;
    }
    if (changed) instance.updatedAt = write.now;
    return true;
  }

  async saveSchedule(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    INPUT.schedule(save);
    const existing = this.schedules.get(save.id);
    if (save.expectRevision === null ? existing : existing?.revision !== save.expectRevision) return null;
    const keepLease = existing && !save.releaseLease;
    const schedule: WorkflowScheduleRecord = {
      id: save.id,
      workflow: save.workflow,
      declared: save.declared,
      spec: copy(save.spec),
      input: copy(save.input),
      paused: save.paused,
      wakeAt: save.wakeAt,
      state: copy(save.state),
      revision: existing ? existing.revision + 1 : 1,
      leaseToken: keepLease ? existing.leaseToken : null,
      leaseOwner: existing ? existing.leaseOwner : null,
      leaseUntil: keepLease ? existing.leaseUntil : null,
      createdAt: existing ? existing.createdAt : save.now,
      updatedAt: save.now,
    };
    this.schedules.set(schedule.id, schedule);
    return copy(schedule);
  }

  async getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    const schedule = this.schedules.get(id);
    return schedule ? copy(schedule) : null;
  }

  async listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    const found = [...this.schedules.values()]
      .filter((s) => query.workflow === undefined || s.workflow === query.workflow)
      .filter((s) => query.declared === undefined || s.declared === query.declared)
      .sort((a, b) => compare(a.id, b.id));
    return copy(found.slice(query.offset, query.offset + query.limit));
  }

  async deleteSchedule(id: string, revision?: number): Promise<boolean> {
    const schedule = this.schedules.get(id);
    if (!schedule || (revision !== undefined && schedule.revision !== revision)) return false;
    return this.schedules.delete(id);
  }

  async claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    INPUT.token(request.token, request.owner);
    const { now } = request;
    const workflows = new Set(request.workflows);
    const claimed = [...this.schedules.values()]
      .filter((s) => !s.paused && s.wakeAt !== null && s.wakeAt <= now && workflows.has(s.workflow))
      .filter((s) => s.leaseToken === null || (s.leaseUntil ?? 0) < now)
      .sort((a, b) => a.wakeAt! - b.wakeAt! || compare(a.id, b.id))
      .slice(0, request.limit);
    for (const schedule of claimed) {
      schedule.leaseToken = request.token;
      schedule.leaseOwner = request.owner;
      schedule.leaseUntil = request.leaseUntil;
    }
    return copy(claimed);
  }

  async writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    const schedule = this.schedules.get(id);
    if (!schedule || schedule.leaseToken !== token) return false;
    schedule.state = copy(write.state);
    schedule.wakeAt = write.wakeAt;
    schedule.revision += 1;
    schedule.updatedAt = write.now;
    if (write.release) {
      schedule.leaseToken = null;
      schedule.leaseUntil = null;
    }
    return true;
  }

  /** `signal()`'s body, shared with `write()` so a child's end signal follows the same rules. */
  private storeSignal(signal: NewWorkflowSignal): WorkflowSignalResult {
    const { record, created } = this.signalLog.add({ ...signal, payload: copy(signal.payload) });
    if (!created) return { id: record.id, woken: 0, created: false, key: record.key };
    let woken = 0;
    for (const { instance, waits } of this.instances.values()) {
      if (instance.status !== 'suspended') continue;
      if (!waits.some((wait) => wait.name === record.name && wait.key === record.key)) continue;
      makeDue(instance, signal.now);
      woken += 1;
    }
    return { id: record.id, woken, created: true, key: record.key };
  }

  private countLeased(workflow: string, concurrencyKey: string | null, now: number): number {
    let count = 0;
    for (const { instance } of this.instances.values()) {
      if (instance.workflow !== workflow || !hasLiveLease(instance, now)) continue;
      if (concurrencyKey === null || instance.concurrencyKey === concurrencyKey) count += 1;
    }
    return count;
  }
}

/** Upserts by name: a replaced entry keeps its place, a new one goes last (first-write order). */
function upsertEntries(stored: StoredInstance, entries: readonly WorkflowJournalEntry[]): void {
  for (const entry of entries) stored.journal.set(entry.name, copy(entry));
}

/** Due now, unless it already is (an earlier `wakeAt` stays: it is the more overdue one). */
function makeDue(instance: WorkflowInstance, now: number): void {
  if (instance.wakeAt === null || instance.wakeAt > now) instance.wakeAt = now;
  instance.updatedAt = now;
}

/** A lease holds until `leaseUntil` inclusive; after that, any claim may take the instance over. */
function hasLiveLease(instance: WorkflowInstance, now: number): boolean {
  return instance.leaseToken !== null && instance.leaseUntil !== null && instance.leaseUntil >= now;
}

function windowKey(workflow: string, key: string | null): string {
  return JSON.stringify([workflow, key]);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
