import { toJson } from './workflow-rows.js';
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
  ];
}

/** `newInstanceParams()` as an object keyed by `NEW_INSTANCE_COLUMNS` (a row of a batch). */
export function newInstanceRow(init: NewWorkflowInstance): Record<(typeof NEW_INSTANCE_COLUMNS)[number], unknown> {
  const params = newInstanceParams(init);
  return Object.fromEntries(NEW_INSTANCE_COLUMNS.map((column, index) => [column, params[index]])) as Record<
    (typeof NEW_INSTANCE_COLUMNS)[number],
    unknown
  >;
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
