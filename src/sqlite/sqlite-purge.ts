import { finishedOnly } from '../sql/status-lists.js';
import { CHILD_ENDED_SIGNAL } from '../storage/workflow-store-signals.js';
import type { WorkflowPurgeQuery, WorkflowPurgeResult } from '../storage/workflow-store.js';
import { deleteInstances } from './sqlite-journal.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import { UNFINISHED, type SqliteTables } from './sqlite-tables.js';

/**
 * `purge()` in the caller's write transaction (each part bounded by `limit`, so it holds the write
 * lock briefly). Under the lock nothing changes between a candidate's check and its delete: an
 * instance an operator reopened meanwhile is unfinished when read, and a parent is read as it is.
 */
export function purge(sql: SqliteStatements, t: SqliteTables, query: WorkflowPurgeQuery): WorkflowPurgeResult {
  const { before, limit } = query;
  const statuses = finishedOnly(query.statuses);
  // Never a child whose parent is unfinished: its end's signal is found through it.
  const keepChild = `EXISTS (SELECT 1 FROM ${t.instances} p WHERE p.id = i.parent_id AND p.status IN ${UNFINISHED})`;
  const ids =
    statuses.length === 0
      ? []
      : sql
          .all<{ id: string }>(
            `SELECT id FROM ${t.instances} i WHERE status IN (${placeholders(statuses.length)}) AND updated_at < ?
  AND NOT ${keepChild} ORDER BY updated_at, id LIMIT ?`,
            [...statuses, before, limit],
          )
          .map((row) => row.id);
  const instances = deleteInstances(sql, t, ids);

  // Never the newest signal (the last id must never go back), nor a child's end while the child's
  // parent is unfinished: the parent may ask for it long after the child ended.
  const signals = sql.run(
    `DELETE FROM ${t.signals} WHERE id IN (
  SELECT s.id FROM ${t.signals} s WHERE s.created_at < ? AND s.id < (SELECT MAX(id) FROM ${t.signals})
    AND NOT (s.name = ? AND EXISTS (SELECT 1 FROM ${t.instances} c JOIN ${t.instances} p ON p.id = c.parent_id
      WHERE c.id = s.key AND p.status IN ${UNFINISHED}))
  ORDER BY s.id LIMIT ?)`,
    [before, CHILD_ENDED_SIGNAL, limit],
  );

  const rateLimits = sql.run(
    `DELETE FROM ${t.rateWindows} WHERE (workflow, has_key, key) IN (
  SELECT workflow, has_key, key FROM ${t.rateWindows} WHERE window_end < ? ORDER BY window_end LIMIT ?)`,
    [before, limit],
  );

  // The keys whose instance has started or is gone: the key's next start makes a new instance either way.
  const debounceKeys = sql.run(
    `DELETE FROM ${t.debounceKeys} WHERE (workflow, key) IN (
  SELECT d.workflow, d.key FROM ${t.debounceKeys} d
  WHERE NOT EXISTS (SELECT 1 FROM ${t.instances} i WHERE i.id = d.instance_id AND i.runs = 0) LIMIT ?)`,
    [limit],
  );
  return { instances, signals, rateLimits, debounceKeys };
}
