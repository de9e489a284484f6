// What the schedule calls of `WorkflowStore` take and return.
import type { WorkflowUnreadablePayloads } from './workflow-instance.js';
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
