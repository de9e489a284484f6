import { signalTopic } from '../sql/signal-topic.js';
import { toBoolean, toJson } from '../sql/workflow-rows.js';
import type { WorkflowLeaseFlags, WorkflowWrite } from '../storage/workflow-store.js';
import { journalRows, upsertJournal, type JournalRow } from './sqlite-journal.js';
import { hasSignalAbove, prepareSignal, storeSignal, type PreparedSignal } from './sqlite-signals.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/** A `write()` with every value serialized: made before the transaction, so a value JSON can't carry stores nothing. */
export interface PreparedWrite {
  write: WorkflowWrite;
  journal: JournalRow[];
  output: string | null | undefined;
  error: string | null | undefined;
  customStatus: string | null | undefined;
  signal: PreparedSignal | undefined;
  /** The release's waits as topics, in order. */
  topics: string[] | undefined;
}

export function prepareWrite(write: WorkflowWrite): PreparedWrite {
  return {
    write,
    journal: journalRows(write.entries),
    output: write.output === undefined ? undefined : toJson(write.output),
    error: write.error === undefined ? undefined : toJson(write.error),
    customStatus: write.customStatus === undefined ? undefined : toJson(write.customStatus),
    signal: write.signal && prepareSignal(write.signal),
    topics: write.release?.waits.map((wait) => signalTopic(wait.name, wait.key)),
  };
}

/**
 * The lease holder's write, in the caller's write transaction: nothing unless `token` is still the
 * instance's lease token (fencing). Under the write lock, the token can't change before commit, and
 * no signal can land between the check of the signals above the release's cursor and the release.
 */
export function applyWrite(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  token: string,
  prepared: PreparedWrite,
): boolean {
  const { write } = prepared;
  const row = sql.get<{ status: string; cancel_requested: number; terminate_requested: number }>(
    `SELECT status, cancel_requested, terminate_requested FROM ${t.instances} WHERE id = ? AND lease_token = ?`,
    [id, token],
  );
  if (!row) return false;
  upsertJournal(sql, t, id, prepared.journal);
  const sets: string[] = [];
  const params: unknown[] = [];
  const set = (column: string, value: unknown) => {
    sets.push(`${column} = ?`);
    params.push(value);
  };
  if (write.status !== undefined) set('status', write.status);
  if (prepared.output !== undefined) set('output', prepared.output);
  if (prepared.error !== undefined) set('error', prepared.error);
  if (prepared.customStatus !== undefined) set('custom_status', prepared.customStatus);
  if (prepared.signal) storeSignal(sql, t, prepared.signal);
  const { release } = write;
  if (release && prepared.topics) {
    const topics = prepared.topics;
    sql.run(`DELETE FROM ${t.waits} WHERE instance_id = ?`, [id]);
    for (const topic of new Set(topics)) {
      sql.run(`INSERT INTO ${t.waits} (topic, instance_id) VALUES (?, ?)`, [topic, id]);
    }
    const status = write.status ?? row.status;
    // A signal stored after the execution's cursor was never seen by it, nor a cancel (or a
    // terminate of a compensating instance) accepted while it ran: without waking now, the
    // instance would sleep on what already arrived.
    const wakeNow =
      (toBoolean(row.cancel_requested) && status === 'suspended') ||
      (toBoolean(row.terminate_requested) && status === 'compensating') ||
      topics.some((topic) => hasSignalAbove(sql, t, topic, release.signalCursor));
    set('wait_topics', JSON.stringify(topics));
    set('lease_token', null);
    set('lease_until', null);
    set('wake_at', wakeNow ? write.now : release.wakeAt);
  }
  if (sets.length > 0) {
    set('updated_at', write.now);
    sql.run(`UPDATE ${t.instances} SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }
  return true;
}

/** `renew()`, in the caller's write transaction. */
export function renewLease(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  token: string,
  leaseUntil: number,
): WorkflowLeaseFlags | null {
  if (
    sql.run(`UPDATE ${t.instances} SET lease_until = ? WHERE id = ? AND lease_token = ?`, [leaseUntil, id, token]) === 0
  )
    return null;
  const row = sql.get<{ cancel_requested: number; terminate_requested: number; paused: number }>(
    `SELECT cancel_requested, terminate_requested, paused FROM ${t.instances} WHERE id = ?`,
    [id],
  )!;
  const flags: WorkflowLeaseFlags = {
    cancelRequested: toBoolean(row.cancel_requested),
    terminateRequested: toBoolean(row.terminate_requested),
  };
  if (toBoolean(row.paused)) flags.paused = true;
  return flags;
}
