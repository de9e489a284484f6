import { quoteIdentifier } from '../sql/schema-name.js';
import { UNFINISHED } from '../sql/status-lists.js';

// The status lists are the SQL stores' one definition (sql/status-lists.ts), re-exported for this store's files.
export { FINISHED, UNFINISHED } from '../sql/status-lists.js';

/** The store's quoted table names for one schema: `"<schema>_instances"`..., and the signals' name in `sqlite_sequence`. */
export function sqliteTables(schema: string) {
  const t = (name: string) => quoteIdentifier(`${schema}_${name}`);
  return {
    instances: t('instances'),
    journal: t('journal'),
    waits: t('waits'),
    signals: t('signals'),
    rateWindows: t('rate_windows'),
    cancelRequests: t('cancel_requests'),
    pausedWorkflows: t('paused_workflows'),
    schedules: t('schedules'),
    streams: t('streams'),
    streamItems: t('stream_items'),
    callbacks: t('callbacks'),
    debounceKeys: t('debounce_keys'),
    processes: t('processes'),
    /** The fair claim's index (migration 0005), for `INDEXED BY`. */
    dueKeyIndex: t('instances_due_key'),
    /** Leases by workflow and key (migration 0001): the fair claim counts a key's running instances. */
    leasedIndex: t('instances_leased'),
    /** The signals table's unquoted name, as `sqlite_sequence` keeps its last id. */
    signalsSequence: `${schema}_signals`,
  };
}

/** What `sqliteTables()` builds. */
export type SqliteTables = ReturnType<typeof sqliteTables>;

/** The instance columns `toInstance()` reads. */
export const INSTANCE_COLUMNS =
  'id, workflow, version, status, input, output, error, custom_status, parent_id, parent_close, concurrency_key, ' +
  'rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, runs, signal_cursor, lease_token, lease_owner, ' +
  'lease_until, cancel_requested, terminate_requested, cancel_reason, trace_context, run_timeout, created_at, updated_at' +
  ', forked_from, forked_from_step';

/** The schedule columns `toSchedule()` reads. */
export const SCHEDULE_COLUMNS =
  'id, workflow, declared, spec, input, paused, wake_at, state, revision, lease_token, lease_owner, lease_until, created_at, updated_at';

/**
 * Due as a claim counts it, written as the claim's partial index is (`status IN ... AND wake_at IS
 * NOT NULL`), so SQLite reads that index. Two parameters: `now`, `now`.
 */
export const DUE = `status IN ${UNFINISHED} AND wake_at IS NOT NULL AND wake_at <= ? AND (lease_token IS NULL OR lease_until < ?)`;

/** The last signal id ever given out (0 before the first): an expression over `sqlite_sequence`. */
export function lastSignalIdSql(t: SqliteTables): string {
  return `COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '${t.signalsSequence}'), 0)`;
}
