import { IN_MEMORY_INPUT as INPUT } from './in-memory-key-limits.js';
import { selectClaims, slotLimitedWorkflows } from '../storage/claim-selection.js';
import { ClaimableInstances } from './in-memory-claimable.js';
import { InMemoryDebounces } from './in-memory-debounces.js';
import { InMemorySchedules } from './in-memory-schedules.js';
import { rewriteIfUnchanged, rewriteInstancePayloads } from './in-memory-payload-rewrite.js';
import { InMemorySignalLog } from './in-memory-signal-log.js';
import { InMemoryStreams } from './in-memory-streams.js';
import { InMemoryCallbacks } from './in-memory-callbacks.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';
import type {
  WorkflowStreamAppend,
  WorkflowStreamAppendResult,
  WorkflowStreamPage,
  WorkflowStreamQuery,
} from '../storage/workflow-store-streams.js';
import { untakenSignals } from './in-memory-untaken-signals.js';
import { storedEntryTexts, storedSignal, toStoredJson } from './stored-json.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import {
  FINISHED_STATUSES,
  UNFINISHED_STATUSES,
  type WorkflowInstance,
  type WorkflowJournalEntry,
  type WorkflowStatus,
  type WorkflowWait,
} from '../storage/workflow-instance.js';
import {
  compareIds,
  copyInstance,
  countDue,
  countLeased,
  countUndeclaredDue,
  hasLiveLease,
  listPage,
  makeDue,
  windowKey,
} from './in-memory-list.js';
import { newStoredInstance } from './in-memory-new-instance.js';
import { InMemoryPauses } from './in-memory-pauses.js';
import { checkBulkIds, type WorkflowBulkChange } from '../storage/workflow-store-bulk.js';
import { InMemoryProcesses } from './in-memory-processes.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
// Deep copies out, so no caller ever holds a reference into the store's state (values come in as JSON).
import { plainCopy as copy } from '../storage/plain-copy.js';
import type {
  WorkflowFork,
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
  WorkflowUntakenSignal,
  WorkflowUntakenSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
  WorkflowStore,
  WorkflowPayloadChange,
  WorkflowPayloadRewrite,
  WorkflowSignalPageQuery,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
  WorkflowWrite,
  WorkflowPausedWorkflow,
  WorkflowPauseRequest,
  WorkflowPauseTarget,
} from '../storage/workflow-store.js';

interface StoredInstance {
  instance: WorkflowInstance;
  waits: WorkflowWait[];
  /** Each entry's JSON text, as a SQL store keeps it, by name; a `Map` keeps first-insertion order when an entry is replaced, which is the journal's order. */
  journal: Map<string, string>;
}

interface RateWindow {
  windowEnd: number;
  count: number;
}

const STORE = 'InMemoryWorkflowStore';
const CANCELLABLE: ReadonlySet<WorkflowStatus> = new Set(['pending', 'running', 'suspended']);
const TERMINABLE: ReadonlySet<WorkflowStatus> = new Set(UNFINISHED_STATUSES);
const FINISHED: ReadonlySet<WorkflowStatus> = new Set(FINISHED_STATUSES);

/**
 * A `WorkflowStore` in the process's memory: the default for development and tests, and the
 * reference the contract suite is written against. Everything is lost when the process ends, so
 * it refuses production unless asked (see `WorkflowsModule`).
 *
 * Every method does all its reads and writes synchronously, with no `await` in between, so each
 * call is atomic on the event loop: that stands in for the row locks, the signal lock and the
 * conditional updates a SQL store needs (two claims can't both take an instance or the last slot,
 * a signal can't slip between a suspension's check and its release); a call that can fail prepares
 * everything first, so it fails having changed nothing. Values are copied in as JSON (what a SQL
 * store reads back, and a value JSON can't carry is refused as it is there) and deep-copied out,
 * so mutating an argument or a result never changes what is stored.
 */
export class InMemoryWorkflowStore implements WorkflowStore {
  private readonly instances = new Map<string, StoredInstance>();
  private readonly signalLog = new InMemorySignalLog();
  /** Rate windows by workflow and rate-limit key (`null`: the workflow's own). */
  private readonly windows = new Map<string, RateWindow>();
  private readonly schedules = new InMemorySchedules();
  private readonly processRecords = new InMemoryProcesses();
  /** The unfinished instances, which is all a claim looks at. */
  private readonly claimable = new ClaimableInstances();
  /** `ctx.stream()`'s logs, dropped with their instance. */
  private readonly streams = new InMemoryStreams();
  /** Operators' pauses of instances and workflows (in-memory-pauses.ts). */
  private readonly pauses = new InMemoryPauses();
  /** `ctx.createCallback()`'s callbacks, dropped with their instance. */
  private readonly callbacks = new InMemoryCallbacks();
  private readonly debounces = new InMemoryDebounces();

  async create(init: NewWorkflowInstance): Promise<{ instance: WorkflowInstance; created: boolean }> {
    return this.createNow(init);
  }

  async createOccurrence(
    scheduleId: string,
    token: string | null,
    init: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    // The lease check and the insert with no `await` between: a pause or a delete lands before both or after.
    if (!this.schedules.fenced(scheduleId, token, init.now, revision)) return null;
    return this.createNow(init);
  }

  /** A fork: created with its origin and journal in the same turn, so nothing sees it without them. */
  async fork(fork: WorkflowFork): Promise<{ instance: WorkflowInstance; created: boolean }> {
    const { instance: init, from, entries } = fork;
    INPUT.entries(init.id, entries);
    const texts = storedEntryTexts(STORE, init.id, entries);
    return this.createNow(init, (stored) => {
      stored.instance.forkedFrom = { id: from.id, step: from.step };
      upsertEntries(stored, entries, texts);
    });
  }

  private createNow(
    init: NewWorkflowInstance,
    fill?: (stored: StoredInstance) => void,
  ): { instance: WorkflowInstance; created: boolean } {
    INPUT.newInstance(init);
    const input = toStoredJson(init.input, STORE, `the input of instance "${init.id}"`);
    if (init.debounce) {
      const replaced = this.debounces.replace(init, input ?? null, (id) => this.instances.get(id)?.instance);
      if (replaced) {
        this.claimable.update(replaced);
        return { instance: copyInstance(replaced), created: false };
      }
    }
    const existing = this.instances.get(init.id);
    if (existing) return { instance: copyInstance(existing.instance), created: false };
    const instance = newStoredInstance(init, input ?? null, this.signalLog.last);
    const stored: StoredInstance = { instance, waits: [], journal: new Map() };
    fill?.(stored);
    this.instances.set(instance.id, stored);
    this.claimable.update(instance);
    if (init.debounce) this.debounces.made(init, instance.id);
    return { instance: copyInstance(instance), created: true };
  }

  async get(id: string, options?: { journal?: boolean }): Promise<WorkflowInstanceDetails | null> {
    const stored = this.instances.get(id);
    if (!stored) return null;
    const details: WorkflowInstanceDetails = { ...this.shown(stored.instance), waits: copy(stored.waits) };
    if (options?.journal)
      details.journal = Array.from(stored.journal.values(), (text) => JSON.parse(text) as WorkflowJournalEntry);
    return details;
  }

  async list(query: WorkflowListQuery): Promise<WorkflowInstance[]> {
    const { pauses } = this;
    // A paused instance is filtered and returned as reads show it (status `paused`).
    const instances = [...this.instances.values()].map((stored) =>
      pauses.isPaused(stored.instance) ? pauses.shown(stored.instance, { ...stored.instance }) : stored.instance,
    );
    return listPage(instances, query).map((instance) =>
      instance.pauseReason === undefined
        ? copyInstance(instance)
        : { ...copyInstance(instance), pauseReason: instance.pauseReason },
    );
  }

  async countDue(now: number, cap: number): Promise<number> {
    return countDue(this.unpaused(this.claimable.instances()), now, cap);
  }

  async countUndeclaredDue(query: WorkflowUndeclaredDueQuery): Promise<WorkflowUndeclaredDue[]> {
    return countUndeclaredDue(this.unpaused(this.claimable.instances()), query);
  }

  async pause(id: string, request: WorkflowPauseRequest): Promise<boolean> {
    return this.pauseOne(id, request);
  }

  async resume(id: string, now: number): Promise<boolean> {
    return this.resumeOne(id, now);
  }

  /** A page of a bulk action: each change made in one synchronous turn, so nothing comes between them. */
  async changeMany(ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    checkBulkIds(ids);
    return ids.filter((id) => {
      if (change.kind === 'cancel') return this.cancelOne(id, change.request);
      if (change.kind === 'pause') return this.pauseOne(id, change.request);
      return this.resumeOne(id, change.now);
    });
  }

  private pauseOne(id: string, request: WorkflowPauseRequest): boolean {
    const instance = this.instances.get(id)?.instance;
    return instance !== undefined && this.pauses.pause(instance, request);
  }

  private resumeOne(id: string, now: number): boolean {
    const instance = this.instances.get(id)?.instance;
    if (!instance || !this.pauses.isPaused(instance)) return false;
    return this.pauses.resume(instance, now);
  }

  async pauseWorkflow(target: WorkflowPauseTarget, request: WorkflowPauseRequest): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return this.pauses.pauseWorkflow(target, request);
  }

  async resumeWorkflow(target: WorkflowPauseTarget): Promise<boolean> {
    INPUT.pauseTarget(target.workflow, target.version);
    return this.pauses.resumeWorkflow(target);
  }

  async pausedWorkflows(): Promise<WorkflowPausedWorkflow[]> {
    return this.pauses.pausedWorkflows();
  }

  async recordProcess(record: WorkflowProcessRecord, staleBefore: number): Promise<void> {
    this.processRecords.record(record, staleBefore);
  }

  async removeProcess(id: string): Promise<boolean> {
    return this.processRecords.remove(id);
  }

  async processes(seenSince: number): Promise<WorkflowProcessRecord[]> {
    return this.processRecords.live(seenSince);
  }

  /** A stored instance copied out as reads show it (`paused` while an operator paused it). */
  private shown(instance: WorkflowInstance): WorkflowInstance {
    return this.pauses.shown(instance, copyInstance(instance));
  }

  /** What a claim could take of `instances`: a paused one (or one of a paused workflow) counts as not due. */
  private unpaused(instances: Iterable<WorkflowInstance>): Iterable<WorkflowInstance> {
    if (this.pauses.none) return instances;
    return [...instances].filter((instance) => this.pauses.claimable(instance));
  }

  async requestCancel(id: string, request: WorkflowCancelRequest): Promise<boolean> {
    return this.cancelOne(id, request);
  }

  private cancelOne(id: string, request: WorkflowCancelRequest): boolean {
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
    // A paused instance is cancelled as it stands: the pause ends, so a worker can run the cancel.
    this.pauses.resume(instance);
    makeDue(instance, request.now);
    this.claimable.update(instance);
    return true;
  }

  async reopen(id: string, reopen: WorkflowReopen): Promise<boolean> {
    INPUT.entries(id, reopen.entries);
    const entries = storedEntryTexts(STORE, id, reopen.entries);
    const error = toStoredJson(reopen.error, STORE, `the error of instance "${id}"`);
    const stored = this.instances.get(id);
    if (!stored) return false;
    const { instance } = stored;
    if (hasLiveLease(instance, reopen.now)) return false;
    if (instance.status !== reopen.expect.status || instance.runs !== reopen.expect.runs) return false;
    // Each child it will wait for must still be able to end it: a purge() or delete() may have come since the caller's check.
    const reachable = (c?: WorkflowInstance) =>
      c !== undefined && (!FINISHED.has(c.status) || this.signalLog.hasAbove(CHILD_ENDED_SIGNAL, c.id, 0));
    if (reopen.awaitedChildren?.some((child) => !reachable(this.instances.get(child)?.instance))) return false;
    upsertEntries(stored, reopen.entries, entries);
    instance.status = reopen.status;
    instance.error = error;
    if (reopen.deadline !== undefined) instance.deadline = reopen.deadline;
    // A cancel's compensations retried stay a cancel's (the engine then ends the instance cancelled).
    if (reopen.status !== 'compensating' || instance.terminateRequested) {
      instance.cancelRequested = false;
      instance.cancelReason = null;
    }
    instance.terminateRequested = false;
    // A lapsed token must not write again: the reopened run belongs to whoever claims it next.
    instance.leaseToken = null;
    instance.leaseUntil = null;
    instance.wakeAt = reopen.now;
    instance.updatedAt = reopen.now;
    if (reopen.retractSignal) this.signalLog.retract(reopen.retractSignal.name, reopen.retractSignal.dedupeId);
    this.claimable.update(instance);
    return true;
  }

  async delete(id: string, statuses: readonly WorkflowStatus[]): Promise<boolean> {
    const stored = this.instances.get(id);
    if (!stored || !statuses.includes(stored.instance.status) || this.parentUnfinished(id)) return false;
    this.claimable.remove(stored.instance);
    this.streams.drop(id);
    this.callbacks.drop(id);
    return this.instances.delete(id);
  }

  // Callbacks (in-memory-callbacks.ts).
  createCallback = async (callback: NewWorkflowCallback): Promise<boolean> => {
    if (!this.instances.has(callback.id)) return false;
    this.callbacks.create(callback);
    return true;
  };
  getCallback = async (id: string, name: string): Promise<WorkflowCallbackRecord | null> =>
    this.callbacks.get(id, name);
  settleCallback = async (settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult> =>
    this.callbacks.settle(settle);
  expireCallback = async (id: string, name: string, now: number): Promise<boolean> =>
    this.callbacks.expire(id, name, now);

  // Streams (in-memory-streams.ts): an unknown instance has none.
  appendStream = async (append: WorkflowStreamAppend): Promise<WorkflowStreamAppendResult | null> =>
    this.instances.has(append.id) ? this.streams.append(append) : null;
  readStream = async (query: WorkflowStreamQuery): Promise<WorkflowStreamPage> => this.streams.read(query);
  listenForStreams = async (listener: (id?: string, stream?: string) => void): Promise<() => Promise<void>> =>
    this.streams.listen(listener);

  async signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult> {
    INPUT.signal(signal);
    return this.storeSignal(storedSignal(STORE, signal));
  }

  // Re-encryption (in-memory-payload-rewrite.ts).
  rewritePayloads = async (id: string, rewrite: WorkflowPayloadRewrite): Promise<number> =>
    rewriteInstancePayloads(this.instances.get(id), rewrite);
  listSignals = async (query: WorkflowSignalPageQuery): Promise<WorkflowSignalRecord[]> =>
    copy(this.signalLog.page(query.afterId, query.limit));
  rewriteSignalPayload = async (id: number, change: WorkflowPayloadChange): Promise<boolean> =>
    rewriteIfUnchanged(this.signalLog.byId(id), 'payload', change);

  async signals(query: WorkflowSignalQuery): Promise<WorkflowSignalRecord[]> {
    return copy(this.signalLog.find(query.name, query.key, query.afterId, query.upToId));
  }

  async untakenSignals(query: WorkflowUntakenSignalQuery): Promise<WorkflowUntakenSignal[]> {
    const journals = Array.from(this.instances.values(), (stored) => stored.journal.values());
    return untakenSignals(this.signalLog, journals, query);
  }

  async purge(query: WorkflowPurgeQuery): Promise<WorkflowPurgeResult> {
    const { before, limit } = query;
    const statuses = new Set(query.statuses);

    // Unfinished instances stay whatever `statuses` says: a reopened one is running again. So does
    // a child whose parent is unfinished: its end's signal is found through it (see below), and a
    // parent cut short before journaling it would, on replay, create it and run it again.
    const instances = [...this.instances.values()]
      .map((stored) => stored.instance)
      .filter(
        (i) => FINISHED.has(i.status) && statuses.has(i.status) && i.updatedAt < before && !this.parentUnfinished(i.id),
      )
      .sort((a, b) => a.updatedAt - b.updatedAt || compareIds(a.id, b.id))
      .slice(0, limit);
    for (const instance of instances) {
      this.instances.delete(instance.id);
      this.streams.drop(instance.id);
      this.callbacks.drop(instance.id);
      this.claimable.remove(instance);
    }

    // The newest signal stays so the last id never goes back (a new instance's cursor relies on it),
    // and a child's end stays while its parent is unfinished: the parent may not have taken it yet.
    const signals = this.signalLog.purge(
      before,
      limit,
      (s) => s.name === CHILD_ENDED_SIGNAL && this.parentUnfinished(s.key),
    );

    const windows = [...this.windows.entries()]
      .filter(([, window]) => window.windowEnd < before)
      .sort(([, a], [, b]) => a.windowEnd - b.windowEnd)
      .slice(0, limit);
    for (const [key] of windows) this.windows.delete(key);

    const debounceKeys = this.debounces.purge(limit, (id) => this.instances.get(id)?.instance);

    return { instances: instances.length, signals, rateLimits: windows.length, debounceKeys };
  }

  /** Whether the instance `id` is a child whose parent exists unfinished. */
  private parentUnfinished(id: string | null): boolean {
    const parentId = id === null ? null : this.instances.get(id)?.instance.parentId;
    const parent = parentId ? this.instances.get(parentId)?.instance : undefined;
    return parent !== undefined && !FINISHED.has(parent.status);
  }

  async claim(request: WorkflowClaimRequest): Promise<WorkflowClaim> {
    INPUT.token(request.token, request.owner);
    const { now } = request;
    const versions = new Map<string, Set<number>>();
    for (const { name, version } of request.workflows) {
      versions.set(name, (versions.get(name) ?? new Set()).add(version));
    }
    // Counted as holding no slot, a lapsed lease must not be renewed beside what this claim leases.
    this.claimable.endLapsedLeases(slotLimitedWorkflows(request), now);
    const accepts = (instance: WorkflowInstance) =>
      !hasLiveLease(instance, now) &&
      versions.get(instance.workflow)?.has(instance.version) === true &&
      this.pauses.claimable(instance);
    const usage = {
      leased: (workflow: string, key: string | null) => countLeased(this.claimable.leaseHolders(), workflow, key, now),
      windowCount: (workflow: string, key: string | null) => {
        const window = this.windows.get(windowKey(workflow, key));
        return window && window.windowEnd > now ? window.count : 0;
      },
    };
    // The selection walks candidates in claim order, passing over what a limit refuses, and stops
    // at `limit`: once it picks `limit` from the first k due, more candidates change nothing.
    // The instances of the claim's workflows running now, by concurrency key: turns their keys had.
    // Counted once, on the first key that asks (only a claim across several keys does).
    let counts: Map<string | null, number> | undefined;
    const running = (key: string | null): number => {
      if (!counts) {
        counts = new Map();
        for (const instance of this.claimable.leaseHolders()) {
          if (!versions.has(instance.workflow) || !hasLiveLease(instance, now) || FINISHED.has(instance.status))
            continue;
          counts.set(instance.concurrencyKey, (counts.get(instance.concurrencyKey) ?? 0) + 1);
        }
      }
      return counts.get(key) ?? 0;
    };
    let due = this.claimable.due(now, accepts, request.limit, running);
    let { selected, windows } = selectClaims(due, request.limit, request, usage);
    for (let wanted = 4 * request.limit; selected.length < request.limit && due.length === wanted / 4; wanted *= 4) {
      due = this.claimable.due(now, accepts, wanted, running);
      ({ selected, windows } = selectClaims(due, request.limit, request, usage));
    }
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
    this.claimable.leased(selected);
    return { instances: selected.map(copyInstance), lastSignalId: this.signalLog.last };
  }

  async renew(id: string, token: string, leaseUntil: number): Promise<WorkflowLeaseFlags | null> {
    const instance = this.instances.get(id)?.instance;
    if (!instance || instance.leaseToken !== token) return null;
    // A lease cut short ends before the due queue expects it to (a longer one is found on the way).
    const shorter = instance.leaseUntil !== null && leaseUntil < instance.leaseUntil;
    instance.leaseUntil = leaseUntil;
    if (shorter) this.claimable.update(instance);
    const flags: WorkflowLeaseFlags = {
      cancelRequested: instance.cancelRequested,
      terminateRequested: instance.terminateRequested,
    };
    if (this.pauses.isPaused(instance)) flags.paused = true;
    return flags;
  }

  async write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    // All or nothing: every value is prepared (copied in as JSON) before anything changes, so a
    // value that can't be stored fails the call with nothing written, the lease still held and
    // the signal unsent.
    INPUT.write(id, write);
    const what = (part: string) => `${part} of instance "${id}"`;
    const entries = storedEntryTexts(STORE, id, write.entries);
    const output = toStoredJson(write.output, STORE, what('the output'));
    const error = toStoredJson(write.error, STORE, what('the error'));
    const customStatus = toStoredJson(write.customStatus, STORE, what('the custom status'));
    const signal = write.signal && storedSignal(STORE, write.signal);
    const waits = write.release && toStoredJson(write.release.waits, STORE, what('the waits'));

    const stored = this.instances.get(id);
    // Fencing: a worker whose lease was taken over (or ended) writes nothing, signal included.
    if (!stored || stored.instance.leaseToken !== token) return false;
    const { instance } = stored;
    upsertEntries(stored, write.entries, entries);

    let changed = false;
    if (write.status !== undefined) {
      instance.status = write.status;
      changed = true;
    }
    if (output !== undefined) {
      instance.output = output;
      changed = true;
    }
    if (error !== undefined) {
      instance.error = error;
      changed = true;
    }
    if (customStatus !== undefined) {
      instance.customStatus = customStatus;
      changed = true;
    }
    if (signal) this.storeSignal(signal);

    const { release } = write;
    if (release && waits) {
      stored.waits = waits;
      instance.leaseToken = null;
      instance.leaseUntil = null;
      // A signal stored after the execution's cursor was never seen by it: without waking now,
      // the instance would sleep on a signal that already arrived. Likewise a cancel (or a
      // terminate of a compensating instance) accepted while the execution ran.
      const wakeNow =
        (instance.cancelRequested && instance.status === 'suspended') ||
        (instance.terminateRequested && instance.status === 'compensating') ||
        waits.some((wait) => this.signalLog.hasAbove(wait.name, wait.key, release.signalCursor));
      instance.wakeAt = wakeNow ? write.now : release.wakeAt;
      changed = true;
    }
    if (changed) instance.updatedAt = write.now;
    if (write.status !== undefined || release) this.claimable.update(instance);
    return true;
  }

  async saveSchedule(save: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    INPUT.schedule(save);
    return this.schedules.save(save);
  }

  async getSchedule(id: string): Promise<WorkflowScheduleRecord | null> {
    return this.schedules.get(id);
  }

  async listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]> {
    return this.schedules.list(query);
  }

  async deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.schedules.delete(id, revision);
  }

  async claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    INPUT.token(request.token, request.owner);
    return this.schedules.claim(request);
  }

  async writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.schedules.write(id, token, write);
  }

  /**
   * `signal()`'s body, shared with `write()` so a child's end signal follows the same rules. Takes
   * the signal as `storedSignal()` prepared it: nothing here can fail.
   */
  private storeSignal(signal: NewWorkflowSignal): WorkflowSignalResult {
    const { record, created } = this.signalLog.add(signal);
    if (!created) return { id: record.id, woken: 0, created: false, key: record.key };
    let woken = 0;
    for (const instance of this.claimable.suspended()) {
      const { waits } = this.instances.get(instance.id)!;
      if (!waits.some((wait) => wait.name === record.name && wait.key === record.key)) continue;
      makeDue(instance, signal.now);
      this.claimable.update(instance);
      woken += 1;
    }
    return { id: record.id, woken, created: true, key: record.key };
  }
}

/** Upserts by name (a replaced entry keeps its place, a new one goes last): `entries` with the texts `storedEntryTexts()` made. */
function upsertEntries(
  stored: StoredInstance,
  entries: readonly WorkflowJournalEntry[],
  texts: readonly string[],
): void {
  for (let index = 0; index < entries.length; index++) stored.journal.set(entries[index]!.name, texts[index]!);
}
