// What the schedule calls of `WorkflowStore` take and return.
import type { WorkflowInstance, WorkflowUnreadablePayloads } from './workflow-instance.js';
import type { NewWorkflowInstance } from './workflow-store-instances.js';
import type { WorkflowLease } from './workflow-lease.js';

export interface WorkflowScheduleRecord {
  id: string;
  workflow: string;
  /** Declared on `@Workflow`, not saved at run time. */
  declared: boolean;
  /** The engine's JSON, stored as is. */
  spec: unknown;
  input: unknown;
  /** Only on a read asked to be `readable`: the input no configured codec could decode (it reads as `undefined`), and why. */
  unreadable?: WorkflowUnreadablePayloads;
  paused: boolean;
  wakeAt: number | null;
  /** The engine's JSON bookkeeping, stored as is. */
  state: unknown;
  revision: number;
  leaseToken: string | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface WorkflowScheduleSave {
  id: string;
  workflow: string;
  declared: boolean;
  spec: unknown;
  input: unknown;
  paused: boolean;
  wakeAt: number | null;
  state: unknown;
  /** `null`: insert unless it exists. A number: replace only while the revision is still this. */
  expectRevision: number | null;
  releaseLease: boolean;
  now: number;
}

export interface WorkflowScheduleQuery {
  workflow?: string;
  declared?: boolean;
  /**
   * Only schedules whose `id` sorts after this one (keyset paging, as `WorkflowListQuery.after`):
   * a schedule deleted or created before the position meanwhile shifts no page, where `offset` would
   * skip one or read one twice.
   */
  after?: string;
  limit: number;
  offset: number;
}

/** The lease every claimed schedule gets, granted at `now`. */
export interface WorkflowScheduleClaimRequest extends WorkflowLease {
  now: number;
  limit: number;
  workflows: string[];
}

export interface WorkflowScheduleWrite {
  now: number;
  state: unknown;
  wakeAt: number | null;
  release: boolean;
  /** Without `release`: the lease's new end. Absent: the lease keeps its end. */
  leaseUntil?: number;
}

/**
 * The schedule part of `WorkflowStore` (which extends it): schedules are stored, leased and fenced
 * as instances are, and an occurrence's create is fenced by the schedule's lease.
 */
export interface WorkflowScheduleStore {
  /**
   * Stores a schedule as one conditional write and returns it as stored, or `null` when the
   * condition fails. `expectRevision: null` inserts it unless the id exists (revision 1,
   * `createdAt = now`); a number replaces the schedule whose `revision` is still that number
   * (revision + 1). Sets `updatedAt = now`; `releaseLease` clears its lease so the worker holding
   * it can no longer `writeSchedule()`. Of two concurrent saves expecting one revision, one lands.
   */
  saveSchedule(schedule: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null>;

  /** The schedule, or `null`. */
  getSchedule(id: string): Promise<WorkflowScheduleRecord | null>;

  /**
   * Schedules matching the filter, ordered by `id`: one page, from `after` (past that id) when
   * given, so a reader paging through every schedule misses none that a delete meanwhile would
   * shift by an offset (re-encryption's pages depend on it).
   */
  listSchedules(query: WorkflowScheduleQuery): Promise<WorkflowScheduleRecord[]>;

  /** Deletes the schedule (only while its `revision` is `revision`, when given); returns whether it did. */
  deleteSchedule(id: string, revision?: number): Promise<boolean>;

  /**
   * Leases up to `limit` due schedules (not paused, `wakeAt <= now`, no lease or a lapsed one,
   * `workflow` in `workflows`), most overdue first (`wakeAt`, then `id`): sets `leaseToken`,
   * `leaseOwner`, `leaseUntil` and nothing else. Two concurrent claims never return the same one.
   */
  claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]>;

  /**
   * The schedule lease holder's write: sets `state`, `wakeAt`, `revision + 1`, `updatedAt = now`
   * and with `release` clears the lease (without it, `leaseUntil` when given extends the lease, so
   * the holder keeps the schedule through its next occurrence), only while `token` is its lease
   * token; else returns `false`. One conditional update: a holder whose lease was taken over, or
   * released by a save, writes nothing.
   */
  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean>;

  /**
   * A schedule occurrence's `create()`, fenced by the schedule's lease: as `create()` (the new
   * instance, or the existing one untouched), but only while `token` is still the lease token of
   * schedule `scheduleId` and the lease is live at the instance's `now` (`leaseUntil >= now`, as
   * `claimSchedules()` counts it); otherwise it creates nothing and returns `null`. The check and
   * the insert are one atomic step that holds the schedule row against changes until the insert
   * commits (a SQL store locks the row in share mode in the insert's own statement): a
   * `saveSchedule()` that releases the lease, a `deleteSchedule()` or a claim under another token
   * either lands first, and the create returns `null`, or waits until the instance is stored. So
   * once a pause, a change or a delete of the schedule has returned, no process that read the
   * schedule before it starts an occurrence of it (with a check before a plain `create()`, the
   * change could land in between). And a holder that stalled past its lease (an event-loop block,
   * a GC pause) before it read the clock for `now` starts nothing it planned before the stall, even
   * while nobody took the schedule over: the next claim plans again and sees how late it is
   * (catch-up); its `writeSchedule()` still lands (a late record beats none, a late start does
   * not). `token: null` (a trigger, which holds no lease): only while the schedule exists, under
   * the same lock, so no trigger that read the schedule before a delete returned starts after it.
   * Returns `null` also when the instance exists and the fence no longer holds.
   *
   * With `revision`, the fence also needs the schedule still at that revision, checked under the
   * same lock: a trigger's instance is stored only with the definition (workflow, input) it read,
   * so once an `upsert()` (a save, which raises the revision) has returned, no trigger that read
   * the schedule before it stores the old definition's run; it reads the schedule again instead.
   */
  createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null>;
}
