import { fromJson, toJson } from './workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance, WorkflowScheduleSave, WorkflowWrite } from '../storage/workflow-store.js';

/** The values a new instance row is made of, in the order `newInstanceParams()` gives them. */
export const NEW_INSTANCE_COLUMNS = [
  'id',
  'workflow',
  'version',
  'input',
  'parent_id',
  'parent_close',
  'concurrency_key',
  'rate_limit_key',
  'priority',
  'schedule_id',
  'scheduled_at',
  'deadline',
  'wake_at',
  'now',
  'lease_token',
  'lease_owner',
  'lease_until',
  'trace_context',
  'run_timeout',
] as const;

/** `create()`'s values in `NEW_INSTANCE_COLUMNS` order, defaults applied and the input as JSON text. */
export function newInstanceParams(init: NewWorkflowInstance): unknown[] {
  return [
    init.id,
    init.workflow,
    init.version,
    toJson(init.input ?? null),
    init.parentId ?? null,
    init.parentClose ?? null,
    init.concurrencyKey ?? null,
    init.rateLimitKey ?? null,
    init.priority ?? 0,
    init.scheduleId ?? null,
    init.scheduledAt ?? null,
    init.deadline ?? null,
    init.wakeAt ?? init.now,
    init.now,
    init.lease?.token ?? null,
    init.lease?.owner ?? null,
    init.lease?.leaseUntil ?? null,
    init.traceContext ? toJson(init.traceContext) : null,
    init.timeout ?? null,
  ];
}

/**
 * `newInstanceParams()` as an object keyed by `NEW_INSTANCE_COLUMNS` (a row of a batch), written
 * out as one literal so every row has the same shape (what `JSON.stringify()` serializes fastest).
 */
export function newInstanceRow(init: NewWorkflowInstance) {
  return {
    id: init.id,
    workflow: init.workflow,
    version: init.version,
    input: toJson(init.input ?? null)!,
    parent_id: init.parentId ?? null,
    parent_close: init.parentClose ?? null,
    concurrency_key: init.concurrencyKey ?? null,
    rate_limit_key: init.rateLimitKey ?? null,
    priority: init.priority ?? 0,
    schedule_id: init.scheduleId ?? null,
    scheduled_at: init.scheduledAt ?? null,
    deadline: init.deadline ?? null,
    wake_at: init.wakeAt ?? init.now,
    now: init.now,
    lease_token: init.lease?.token ?? null,
    lease_owner: init.lease?.owner ?? null,
    lease_until: init.lease?.leaseUntil ?? null,
    trace_context: init.traceContext ? toJson(init.traceContext) : null,
    run_timeout: init.timeout ?? null,
  } satisfies Record<(typeof NEW_INSTANCE_COLUMNS)[number], unknown>;
}

/** What `newInstanceRow()` makes. */
export type NewInstanceRow = ReturnType<typeof newInstanceRow>;

/** `newInstanceParams()` of the instance `row` was made from: its values in `NEW_INSTANCE_COLUMNS` order. */
export function newInstanceRowParams(row: NewInstanceRow): unknown[] {
  return NEW_INSTANCE_COLUMNS.map((column) => row[column]);
}

/**
 * The instance a create inserted from `row`, as reading it back would give it (`toInstance()` of
 * the new row), built from what was sent: the database adds only the signal cursor. A pending
 * instance, or a running one with its first run counted when it was created leased.
 */
export function insertedInstance(row: NewInstanceRow, signalCursor: number): WorkflowInstance {
  const leased = row.lease_token !== null;
  return {
    id: row.id,
    workflow: row.workflow,
    version: row.version,
    status: leased ? 'running' : 'pending',
    input: fromJson(row.input),
    output: null,
    error: null,
    customStatus: null,
    parentId: row.parent_id,
    parentClose: row.parent_close,
    concurrencyKey: row.concurrency_key,
    rateLimitKey: row.rate_limit_key,
    priority: row.priority,
    scheduleId: row.schedule_id,
    scheduledAt: row.scheduled_at,
    deadline: row.deadline,
    timeout: row.run_timeout,
    wakeAt: row.wake_at,
    runs: leased ? 1 : 0,
    signalCursor,
    leaseToken: row.lease_token,
    leaseOwner: row.lease_owner,
    leaseUntil: row.lease_until,
    cancelRequested: false,
    terminateRequested: false,
    cancelReason: null,
    traceContext: fromJson(row.trace_context) as Record<string, string> | null,
    createdAt: row.now,
    updatedAt: row.now,
  };
}

/**
 * One `write()` as a row of flags and values: each optional field with a `set_` flag (an absent
 * field is left as it is, which `null` could not say), payloads as JSON text. `count` is how many
 * journal entries it upserts (each name once); the entries themselves go apart, as JSON text.
 */
export function writeRow(id: string, token: string, count: number, write: WorkflowWrite) {
  return {
    id,
    token,
    count,
    now: write.now,
    set_status: write.status !== undefined,
    status: write.status ?? null,
    set_output: write.output !== undefined,
    output: write.output === undefined ? null : toJson(write.output),
    set_error: write.error !== undefined,
    error: write.error === undefined ? null : toJson(write.error),
    set_custom: write.customStatus !== undefined,
    custom_status: write.customStatus === undefined ? null : toJson(write.customStatus),
    release: write.release !== undefined,
    wake_at: write.release?.wakeAt ?? null,
  };
}

/** What `writeRow()` makes. */
export type WriteRow = ReturnType<typeof writeRow>;

/** `saveSchedule()`'s values: id, workflow, declared, spec, input, paused, wake at, state, now. */
export function scheduleParams(save: WorkflowScheduleSave): unknown[] {
  return [
    save.id,
    save.workflow,
    save.declared,
    toJson(save.spec ?? null),
    toJson(save.input ?? null),
    save.paused,
    save.wakeAt,
    toJson(save.state ?? null),
    save.now,
  ];
}
