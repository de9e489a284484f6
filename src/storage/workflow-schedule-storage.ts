import { WorkflowPayloadError } from '../errors/workflow-payload.error.js';
import type { PayloadEncoding } from './payload-encoding.js';
import type { WorkflowInstance } from './workflow-instance.js';
import type {
  NewWorkflowInstance,
  WorkflowScheduleClaimRequest,
  WorkflowScheduleQuery,
  WorkflowScheduleRecord,
  WorkflowScheduleSave,
  WorkflowScheduleWrite,
  WorkflowStore,
} from './workflow-store.js';
import { UNREADABLE_RETRY_DELAY, type WorkflowStorageOptions } from './workflow-storage-options.js';

/**
 * The schedules' part of the storage layer, `WorkflowStorage.schedules`, over the same store and
 * codecs: a schedule's input passes the codecs here as an instance's does in `WorkflowStorage`, and
 * so does the input of the instance an occurrence starts.
 */
export class WorkflowScheduleStorage {
  constructor(
    private readonly store: WorkflowStore,
    private readonly options: WorkflowStorageOptions,
    private readonly encoding: PayloadEncoding | null,
  ) {}

  /** In: the schedule's input. Out: the schedule as stored. */
  async saveSchedule(schedule: WorkflowScheduleSave): Promise<WorkflowScheduleRecord | null> {
    const { encoding } = this;
    if (!encoding) return this.store.saveSchedule(schedule);
    const saved = await this.store.saveSchedule(await encoding.scheduleSave(schedule));
    return saved && { ...saved, input: schedule.input };
  }

  /** Out: the schedule (`readable`: as `listSchedules()`). */
  async getSchedule(id: string, options: { readable?: boolean } = {}): Promise<WorkflowScheduleRecord | null> {
    const record = await this.store.getSchedule(id);
    if (!record || !this.encoding) return record;
    return options.readable ? this.encoding.readableSchedule(record) : this.encoding.schedule(record);
  }

  /**
   * Out: one page of schedules. An input no configured codec can read throws `WorkflowPayloadError`;
   * with `readable: true` (for a caller that never saves the input back) it reads as `undefined`
   * and `unreadable` says why.
   */
  async listSchedules(
    query: WorkflowScheduleQuery,
    options: { readable?: boolean } = {},
  ): Promise<WorkflowScheduleRecord[]> {
    const records = await this.store.listSchedules(query);
    const { encoding } = this;
    if (!options.readable || !encoding) return this.decodeSchedules(records);
    return Promise.all(records.map((record) => encoding.readableSchedule(record)));
  }

  deleteSchedule(id: string, revision?: number): Promise<boolean> {
    return this.store.deleteSchedule(id, revision);
  }

  /**
   * Out: the claimed schedules, decoded. One whose input no configured codec can read is released
   * at once, due again after `UNREADABLE_RETRY_DELAY`, and reported to `onUnreadable`, as for instances.
   */
  async claimSchedules(request: WorkflowScheduleClaimRequest): Promise<WorkflowScheduleRecord[]> {
    const records = await this.store.claimSchedules(request);
    const { encoding } = this;
    if (!encoding || records.length === 0) return records;
    const decoded = await Promise.all(
      records.map(async (record) => {
        try {
          return await encoding.schedule(record);
        } catch (error) {
          if (!(error instanceof WorkflowPayloadError)) throw error;
          const { now, token } = request;
          await this.store.writeSchedule(record.id, token, {
            now,
            state: record.state,
            wakeAt: now + UNREADABLE_RETRY_DELAY,
            release: true,
          });
          this.options.onUnreadable?.(`Schedule "${record.id}"`, error);
          return null;
        }
      }),
    );
    return decoded.filter((record): record is WorkflowScheduleRecord => record !== null);
  }

  writeSchedule(id: string, token: string, write: WorkflowScheduleWrite): Promise<boolean> {
    return this.store.writeSchedule(id, token, write);
  }

  /**
   * `create()` of a schedule's occurrence, only while `token` holds the schedule's live lease (with
   * `token: null`, while the schedule exists) and, with `revision`, while the schedule is still at
   * it; `null` otherwise.
   */
  async createOccurrence(
    scheduleId: string,
    token: string | null,
    instance: NewWorkflowInstance,
    revision?: number,
  ): Promise<{ instance: WorkflowInstance; created: boolean } | null> {
    const { encoding } = this;
    if (!encoding) return this.store.createOccurrence(scheduleId, token, instance, revision);
    const result = await this.store.createOccurrence(scheduleId, token, await encoding.newInstance(instance), revision);
    return result && encoding.created(instance, result);
  }

  private decodeSchedules(
    records: WorkflowScheduleRecord[],
  ): Promise<WorkflowScheduleRecord[]> | WorkflowScheduleRecord[] {
    const { encoding } = this;
    if (!encoding || records.length === 0) return records;
    return Promise.all(records.map((record) => encoding.schedule(record)));
  }
}
