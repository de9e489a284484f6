import {
  bodyIndexes,
  planStreamAppend,
  toStreamHead,
  toStreamRecord,
  toStreamTail,
  type StreamHead,
} from '../sql/stream-appends.js';
import { toNumber } from '../sql/workflow-rows.js';
import type {
  WorkflowStreamAppend,
  WorkflowStreamAppendResult,
  WorkflowStreamPage,
  WorkflowStreamQuery,
} from '../storage/workflow-store-streams.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/**
 * `appendStream()` in the store's write transaction (the file's write lock serializes appends of
 * every process): `null` when the instance does not exist, checked in that same transaction.
 */
export function appendStream(
  sql: SqliteStatements,
  t: SqliteTables,
  append: WorkflowStreamAppend,
): WorkflowStreamAppendResult | null {
  const { id, stream } = append;
  if (!sql.get(`SELECT 1 AS found FROM ${t.instances} WHERE id = ?`, [id])) return null;
  const row = sql.get<{ last_seq: number; value_count: number; bytes: number; closed: number }>(
    `SELECT last_seq, value_count, bytes, closed FROM ${t.streams} WHERE instance_id = ? AND name = ?`,
    [id, stream],
  );
  const head: StreamHead = row ? toStreamHead(row) : { lastSeq: 0, values: 0, bytes: 0, closed: false };
  const indexes = bodyIndexes(append);
  const stored = new Map<number, number>();
  if (indexes.length > 0) {
    const found = sql.all<{ body_index: number; seq: number }>(
      `SELECT body_index, seq FROM ${t.streamItems} WHERE instance_id = ? AND name = ? AND body_index IN (${placeholders(indexes.length)})`,
      [id, stream, ...indexes],
    );
    for (const { body_index, seq } of found) stored.set(toNumber(body_index), toNumber(seq));
  }
  const plan = planStreamAppend(head, stored, append);
  const next = plan.next;
  if (!next) return plan.result;
  for (const r of plan.rows) {
    sql.run(
      `INSERT INTO ${t.streamItems} (instance_id, name, seq, kind, value, body_index, step, attempt, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [id, stream, r.seq, r.kind, r.value, r.bodyIndex, r.step, r.attempt, r.createdAt],
    );
  }
  sql.run(
    `INSERT INTO ${t.streams} (instance_id, name, last_seq, value_count, bytes, closed) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (instance_id, name) DO UPDATE SET last_seq = excluded.last_seq, value_count = excluded.value_count,
  bytes = excluded.bytes, closed = excluded.closed`,
    [id, stream, next.lastSeq, next.values, next.bytes, next.closed],
  );
  return plan.result;
}

/** `readStream()`: the stream's row, then its items, in one read transaction (one snapshot). */
export function readStream(sql: SqliteStatements, t: SqliteTables, query: WorkflowStreamQuery): WorkflowStreamPage {
  const head = sql.get<{ last_seq: number; closed: number }>(
    `SELECT last_seq, closed FROM ${t.streams} WHERE instance_id = ? AND name = ?`,
    [query.id, query.stream],
  );
  if (!head) return { items: [], closed: false, lastSeq: 0 };
  const rows = sql.all(
    `SELECT seq, kind, value, step, attempt, created_at FROM ${t.streamItems} WHERE instance_id = ? AND name = ? AND seq > ? ORDER BY seq LIMIT ?`,
    [query.id, query.stream, query.after, query.limit],
  );
  return {
    items: rows.map(toStreamRecord),
    ...toStreamTail(head),
  };
}

/** Deletes the streams (and callbacks) of an instance being deleted, in the transaction that deletes it. */
export function deleteStreams(sql: SqliteStatements, t: SqliteTables, id: string): void {
  sql.run(`DELETE FROM ${t.streamItems} WHERE instance_id = ?`, [id]);
  sql.run(`DELETE FROM ${t.streams} WHERE instance_id = ?`, [id]);
  sql.run(`DELETE FROM ${t.callbacks} WHERE instance_id = ?`, [id]);
}
