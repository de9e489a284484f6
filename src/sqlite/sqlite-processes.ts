import { fromJson } from '../sql/workflow-rows.js';
import type { WorkflowDeclaredVersion, WorkflowProcessRecord } from '../storage/workflow-store-processes.js';
import type { SqliteStatements } from './sqlite-statements.js';
import type { SqliteTables } from './sqlite-tables.js';

/** `recordProcess()` in the caller's write transaction: the upsert, then the stale rows removed. */
export function recordProcess(
  sql: SqliteStatements,
  t: SqliteTables,
  record: WorkflowProcessRecord,
  staleBefore: number,
): void {
  const { id, owner, host, pid, declared, startedAt, seenAt } = record;
  sql.run(
    `INSERT INTO ${t.processes} (id, owner, host, pid, declared, started_at, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, host = excluded.host, pid = excluded.pid,
  declared = excluded.declared, started_at = excluded.started_at, seen_at = excluded.seen_at`,
    [id, owner, host, pid, JSON.stringify(declared), startedAt, seenAt],
  );
  sql.run(`DELETE FROM ${t.processes} WHERE seen_at < ?`, [staleBefore]);
}

export function removeProcess(sql: SqliteStatements, t: SqliteTables, id: string): boolean {
  return sql.run(`DELETE FROM ${t.processes} WHERE id = ?`, [id]) > 0;
}

export function liveProcesses(sql: SqliteStatements, t: SqliteTables, seenSince: number): WorkflowProcessRecord[] {
  return sql
    .all(
      `SELECT id, owner, host, pid, declared, started_at, seen_at FROM ${t.processes} WHERE seen_at >= ? ORDER BY started_at, id`,
      [seenSince],
    )
    .map((row) => ({
      id: String(row.id),
      owner: String(row.owner),
      host: String(row.host),
      pid: Number(row.pid),
      declared: fromJson(row.declared) as WorkflowDeclaredVersion[],
      startedAt: Number(row.started_at),
      seenAt: Number(row.seen_at),
    }));
}
