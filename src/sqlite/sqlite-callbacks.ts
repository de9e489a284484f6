import { CALLBACK_COLUMNS, callbackPayload, refusedSettle, toCallback } from '../sql/callback-rows.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/** `createCallback()` in a write transaction: `false` when the instance does not exist, checked in it. */
export function createCallback(sql: SqliteStatements, t: SqliteTables, callback: NewWorkflowCallback): boolean {
  const { id, name, tokenHash, expiresAt, now } = callback;
  if (!sql.get(`SELECT 1 AS found FROM ${t.instances} WHERE id = ?`, [id])) return false;
  sql.run(
    `INSERT INTO ${t.callbacks} (instance_id, name, token_hash, expires_at, created_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (instance_id, name) DO UPDATE SET token_hash = excluded.token_hash, expires_at = excluded.expires_at
  WHERE ${t.callbacks}.state = 'open'`,
    [id, name, tokenHash, expiresAt, now],
  );
  return true;
}

export function getCallback(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  name: string,
): WorkflowCallbackRecord | null {
  const row = sql.get(`SELECT ${CALLBACK_COLUMNS} FROM ${t.callbacks} WHERE instance_id = ? AND name = ?`, [id, name]);
  return row ? toCallback(row) : null;
}

/** `settleCallback()` in a write transaction: the conditional update, then its row by hash. */
export function settleCallback(
  sql: SqliteStatements,
  t: SqliteTables,
  settle: WorkflowCallbackSettle,
): WorkflowCallbackSettleResult {
  const changed = sql.run(
    `UPDATE ${t.callbacks} SET state = ?, payload = ?, settled_at = ?
  WHERE token_hash = ? AND state = 'open' AND (expires_at IS NULL OR expires_at > ?)`,
    [settle.state, callbackPayload(settle.payload), settle.now, settle.tokenHash, settle.now],
  );
  const row = sql.get(`SELECT instance_id, name, state, expires_at FROM ${t.callbacks} WHERE token_hash = ?`, [
    settle.tokenHash,
  ]);
  if (changed > 0 && row) return { outcome: 'settled', id: String(row.instance_id), name: String(row.name) };
  return refusedSettle(row, settle.now);
}

export function expireCallback(sql: SqliteStatements, t: SqliteTables, id: string, name: string, now: number): boolean {
  return (
    sql.run(
      `UPDATE ${t.callbacks} SET state = 'expired', settled_at = ? WHERE instance_id = ? AND name = ? AND state = 'open'`,
      [now, id, name],
    ) > 0
  );
}
