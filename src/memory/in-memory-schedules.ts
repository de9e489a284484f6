import { toStoredJson } from './stored-json.js';
import type {
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
} from '../storage/workflow-store.js';

const STORE = 'InMemoryWorkflowStore';

/** Deep copy out, so no caller ever holds a reference into the stored schedules. */
const copy = <T>(value: T): T => structuredClone(value);

/**
 * The schedules of `InMemoryWorkflowStore`, under the same rules as its instances: each call does
 * all its reads and writes with no `await` in between (so it is atomic on the event loop), and
 * values are copied in as JSON and deep-copied out.
 */
export class InMemorySchedules {
  private readonly schedules = new Map<string, WorkflowScheduleRecord>();

  save(save: WorkflowScheduleSave): WorkflowScheduleRecord | null {
    const spec = toStoredJson(save.spec, STORE, `the spec of schedule "${save.id}"`);
    const input = toStoredJson(save.input, STORE, `the input of schedule "${save.id}"`);
    const state = toStoredJson(save.state, STORE, `the state of schedule "${save.id}"`);
    const existing = this.schedules.get(save.id);
    if (save.expectRevision === null ? existing : existing?.revision !== save.expectRevision) return null;
    const keepLease = existing && !save.releaseLease;
    const schedule: WorkflowScheduleRecord = {
      id: save.id,
      workflow: save.workflow,
      declared: save.declared,
      spec,
      input,
      paused: save.paused,
      wakeAt: save.wakeAt,
      state,
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

  get(id: string): WorkflowScheduleRecord | null {
    const schedule = this.schedules.get(id);
    return schedule ? copy(schedule) : null;
  }

  list(query: WorkflowScheduleQuery): WorkflowScheduleRecord[] {
    const found = [...this.schedules.values()]
      .filter((s) => query.workflow === undefined || s.workflow === query.workflow)
      .filter((s) => query.declared === undefined || s.declared === query.declared)
      .filter((s) => query.after === undefined || compare(s.id, query.after) > 0)
      .sort((a, b) => compare(a.id, b.id));
    return copy(found.slice(query.offset, query.offset + query.limit));
  }

  delete(id: string, revision?: number): boolean {
    const schedule = this.schedules.get(id);
    if (!schedule || (revision !== undefined && schedule.revision !== revision)) return false;
    return this.schedules.delete(id);
  }

  claim(request: WorkflowScheduleClaimRequest): WorkflowScheduleRecord[] {
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

  /**
   * The fence of `createOccurrence()`: whether `token` holds the schedule's lease, live at `now`;
   * with `token: null`, whether the schedule exists; with `revision`, also whether it is still at it.
   */
  fenced(id: string, token: string | null, now: number, revision?: number): boolean {
    const schedule = this.schedules.get(id);
    if (!schedule || (revision !== undefined && schedule.revision !== revision)) return false;
    return token === null || (schedule.leaseToken === token && (schedule.leaseUntil ?? 0) >= now);
  }

  write(id: string, token: string, write: WorkflowScheduleWrite): boolean {
    const state = toStoredJson(write.state, STORE, `the state of schedule "${id}"`);
    const schedule = this.schedules.get(id);
    if (!schedule || schedule.leaseToken !== token) return false;
    schedule.state = state;
    schedule.wakeAt = write.wakeAt;
    schedule.revision += 1;
    schedule.updatedAt = write.now;
    if (write.release) {
      schedule.leaseToken = null;
      schedule.leaseUntil = null;
    } else if (write.leaseUntil !== undefined) {
      schedule.leaseUntil = write.leaseUntil;
    }
    return true;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
