import { MYSQL_DIALECT } from './mysql-dialect.js';

/** The store's quoted table names for one schema: `` `<schema>_instances` ``... */
export function mysqlTables(schema: string) {
  const t = (name: string) => MYSQL_DIALECT.table(schema, name);
  return {
    instances: t('instances'),
    journal: t('journal'),
    waits: t('waits'),
    signals: t('signals'),
    locks: t('locks'),
    rateWindows: t('rate_windows'),
    schedules: t('schedules'),
    cancelNotices: t('cancel_notices'),
    pausedWorkflows: t('paused_workflows'),
    debounceKeys: t('debounce_keys'),
    processes: t('processes'),
  };
}

/** What `mysqlTables()` builds. */
export type MySqlTables = ReturnType<typeof mysqlTables>;

/** The instance columns `toInstance()` reads. */
export const INSTANCE_COLUMNS =
  'id, workflow, version, status, input, output, error, custom_status, parent_id, parent_close, concurrency_key, ' +
  'rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, runs, signal_cursor, lease_token, lease_owner, ' +
  'lease_until, cancel_requested, terminate_requested, cancel_reason, trace_context, run_timeout, created_at, updated_at' +
  ', forked_from, forked_from_step';

/**
 * The instance columns a claim reads: `INSTANCE_COLUMNS` but those the lease sets whatever they
 * were (`lease_token`, `lease_owner`, `lease_until`, `updated_at`).
 */
export const CLAIM_COLUMNS = INSTANCE_COLUMNS.split(', ')
  .filter((column) => !['lease_token', 'lease_owner', 'lease_until', 'updated_at'].includes(column))
  .join(', ');

/** The schedule columns `toSchedule()` reads. */
export const SCHEDULE_COLUMNS =
  'id, workflow, declared, spec, input, paused, wake_at, state, revision, lease_token, lease_owner, lease_until, created_at, updated_at';

/**
 * The most payload text (UTF-16 code units, summed over a batch's JSON values) one batched
 * statement carries. The server refuses a statement longer than `max_allowed_packet` (16 MB by
 * default on MariaDB, 64 MB on MySQL), failing every call of the batch; a unit is at most 3 bytes
 * as sent (UTF-8, or a character mysql2 escapes), so a batch stays under 12 MB. A call heavier
 * than this alone goes in a batch of its own.
 */
export const MAX_BATCH_TEXT = 4_000_000;

/** `?, ?, ?`: one placeholder per value. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}
