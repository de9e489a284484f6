import type { SqlExecutor } from '../sql/sql-executor.js';
import type { WorkflowUndeclaredDue, WorkflowUndeclaredDueQuery } from '../storage/workflow-store.js';
import { UNFINISHED } from '../sql/status-lists.js';

/**
 * `countUndeclaredDue()` on MySQL / MariaDB: due instances without a lease (by instances_wake,
 * `(lease_token, wake_at)`) and with one that lapsed before `dueBefore` (by instances_lapsed), of
 * pairs not declared, each part stopping at the cap; grouped per pair. Never a scan of every instance.
 */
export async function countUndeclaredDue(
  executor: SqlExecutor,
  instances: string,
  query: WorkflowUndeclaredDueQuery,
): Promise<WorkflowUndeclaredDue[]> {
  const pairs =
    query.workflows.length === 0
      ? ''
      : `AND (workflow, version) NOT IN (${query.workflows.map(() => '(?, ?)').join(', ')})`;
  const declared = query.workflows.flatMap(({ name, version }) => [name, version]);
  const part = (due: string) =>
    `(SELECT workflow, version FROM ${instances} WHERE ${due} AND status IN ${UNFINISHED} AND wake_at <= ? ${pairs} LIMIT ?)`;
  const { rows } = await executor.query(
    `SELECT workflow, version, COUNT(*) AS count FROM (SELECT workflow, version FROM (
  ${part('lease_token IS NULL AND wake_at IS NOT NULL')}
  UNION ALL
  ${part('lease_until < ? AND lease_token IS NOT NULL')}
) due LIMIT ?) capped GROUP BY workflow, version ORDER BY workflow, version`,
    [query.dueBefore, ...declared, query.cap, query.dueBefore, query.dueBefore, ...declared, query.cap, query.cap],
  );
  return rows.map((row) => ({
    workflow: String(row.workflow),
    version: Number(row.version),
    count: Number(row.count),
  }));
}

/**
 * `countDue()` on MySQL / MariaDB: instances due at `now` without a lease (by instances_wake) plus
 * those whose lease lapsed (by instances_lapsed), each part stopping at `cap`: the health check's
 * and the backlog gauge's count costs the same however large the backlog.
 */
export async function countDue(executor: SqlExecutor, instances: string, now: number, cap: number): Promise<number> {
  const part = (due: string) =>
    `(SELECT COUNT(*) FROM (SELECT 1 FROM ${instances} WHERE ${due} AND status IN ${UNFINISHED} AND wake_at <= ? LIMIT ?) p)`;
  const { rows } = await executor.query(
    `SELECT LEAST(?, ${part('lease_token IS NULL AND wake_at IS NOT NULL')} + ${part('lease_until < ? AND lease_token IS NOT NULL')}) AS due`,
    [cap, now, cap, now, now, cap],
  );
  return Number(rows[0]?.due ?? 0);
}
