import { signalTopic } from '../sql/signal-topic.js';
import { toJson, toNumber, toSignal } from '../sql/workflow-rows.js';
import type {
  NewWorkflowSignal,
  WorkflowSignalQuery,
  WorkflowSignalRecord,
  WorkflowSignalResult,
} from '../storage/workflow-store.js';
import type { SqliteStatements } from './sqlite-statements.js';
import { lastSignalIdSql, type SqliteTables } from './sqlite-tables.js';

/** A signal ready to store: its payload already JSON text, so storing it can't fail on the value. */
export interface PreparedSignal {
  signal: NewWorkflowSignal;
  payload: string | null;
}

/** `signal` with its payload as JSON text; throws (before any statement) when JSON can't carry it. */
export function prepareSignal(signal: NewWorkflowSignal): PreparedSignal {
  return { signal, payload: toJson(signal.payload ?? null) };
}

/**
 * Stores a signal under the next id and makes due every suspended instance waiting on its topic,
 * or, when one with its name and `dedupeId` is stored, returns that one and wakes nothing. In the
 * caller's write transaction: under the write lock no suspension can land between the insert and
 * the wake-up. Insert-or-ignore, so it raises no error inside an application's transaction.
 */
export function storeSignal(sql: SqliteStatements, t: SqliteTables, { signal, payload }: PreparedSignal) {
  const topic = signalTopic(signal.name, signal.key);
  const id = sql.insert(
    `INSERT INTO ${t.signals} (name, key, topic, dedupe_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (name, dedupe_id) DO NOTHING`,
    [signal.name, signal.key, topic, signal.dedupeId, payload, signal.now],
  );
  if (id === null) {
    const earlier = sql.get<{ id: number; key: string | null }>(
      `SELECT id, key FROM ${t.signals} WHERE name = ? AND dedupe_id = ?`,
      [signal.name, signal.dedupeId],
    )!;
    return { id: toNumber(earlier.id), woken: 0, created: false, key: earlier.key } satisfies WorkflowSignalResult;
  }
  const woken = sql.run(
    `UPDATE ${t.instances} SET wake_at = CASE WHEN wake_at IS NULL OR wake_at > ? THEN ? ELSE wake_at END, updated_at = ?
  WHERE status = 'suspended' AND id IN (SELECT instance_id FROM ${t.waits} WHERE topic = ?)`,
    [signal.now, signal.now, signal.now, topic],
  );
  return { id, woken, created: true, key: signal.key } satisfies WorkflowSignalResult;
}

/** Signals of one topic with `afterId < id <= upToId`, in id order. */
export function readSignals(
  sql: SqliteStatements,
  t: SqliteTables,
  query: WorkflowSignalQuery,
): WorkflowSignalRecord[] {
  return sql
    .all(
      `SELECT id, name, key, payload, created_at FROM ${t.signals} WHERE topic = ? AND id > ? AND id <= ? ORDER BY id`,
      [signalTopic(query.name, query.key), query.afterId, query.upToId],
    )
    .map(toSignal);
}

/** Whether a signal of `topic` with an id above `afterId` is stored. */
export function hasSignalAbove(sql: SqliteStatements, t: SqliteTables, topic: string, afterId: number): boolean {
  return (
    sql.get(`SELECT 1 AS found FROM ${t.signals} WHERE topic = ? AND id > ? LIMIT 1`, [topic, afterId]) !== undefined
  );
}

/** The highest signal id given out, or 0. */
export function lastSignalId(sql: SqliteStatements, t: SqliteTables): number {
  return toNumber(sql.get<{ id: number }>(`SELECT ${lastSignalIdSql(t)} AS id`)!.id);
}
