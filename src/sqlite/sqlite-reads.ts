import { pauseColumns, toInstance, toNumber, toWaits } from '../sql/workflow-rows.js';
import { sqliteUnpaused } from './sqlite-pauses.js';
import { shownStatusCondition } from '../sql/status-lists.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type {
  WorkflowInstanceDetails,
  WorkflowListQuery,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from '../storage/workflow-store.js';
import { readJournal } from './sqlite-journal.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import { DUE, INSTANCE_COLUMNS, type SqliteTables } from './sqlite-tables.js';

// The store's reads, each in one read transaction of the caller (a consistent snapshot, taken
// without the write lock: in WAL mode readers never wait for a writer).

export function getInstance(
  sql: SqliteStatements,
  t: SqliteTables,
  id: string,
  journal: boolean,
): WorkflowInstanceDetails | null {
  const row = sql.get(`SELECT ${INSTANCE_COLUMNS}, ${pauseColumns()}, wait_topics FROM ${t.instances} WHERE id = ?`, [
    id,
  ]);
  if (!row) return null;
  const details: WorkflowInstanceDetails = { ...toInstance(row), waits: toWaits(row.wait_topics) };
  if (journal) details.journal = readJournal(sql, t, id);
  return details;
}

/**
 * `list()`: the query's filters and keyset position, ordered by `created_at, id` (or both
 * descending), so an index on `(..., created_at, id)` serves each filter in order.
 */
export function listInstances(sql: SqliteStatements, t: SqliteTables, query: WorkflowListQuery): WorkflowInstance[] {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (condition: string, ...values: unknown[]) => {
    where.push(condition);
    params.push(...values);
  };
  if (query.status !== undefined) {
    const statuses: unknown[] = [];
    const condition = shownStatusCondition(query.status, (list) => {
      statuses.push(...list);
      return placeholders(list.length);
    });
    add(condition, ...statuses);
  }
  if (query.workflow !== undefined) add('workflow = ?', query.workflow);
  if (query.version !== undefined) add('version = ?', query.version);
  if (query.parentId !== undefined) add('parent_id = ?', query.parentId);
  if (query.scheduleId !== undefined) add('schedule_id = ?', query.scheduleId);
  // substr() decides (LIKE would read % and _ and fold ASCII case); the range lets the primary key find the ids.
  if (query.idPrefix !== undefined) {
    add('substr(id, 1, ?) = ?', [...query.idPrefix].length, query.idPrefix);
    add('id >= ?', query.idPrefix);
  }
  if (query.createdFrom !== undefined) add('created_at >= ?', query.createdFrom);
  if (query.createdBefore !== undefined) add('created_at < ?', query.createdBefore);
  const desc = query.order === 'desc';
  if (query.after !== undefined) {
    const { createdAt, id } = query.after;
    add(desc ? '(created_at, id) < (?, ?)' : '(created_at, id) > (?, ?)', createdAt, id);
  }
  const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  const order = desc ? 'created_at DESC, id DESC' : 'created_at, id';
  return sql
    .all(
      `SELECT ${INSTANCE_COLUMNS}, ${pauseColumns()} FROM ${t.instances}${filter} ORDER BY ${order} LIMIT ? OFFSET ?`,
      [...params, query.limit, query.offset],
    )
    .map(toInstance);
}

/** `countDue()`: by the claim's index, stopping at `cap`. */
export function countDue(sql: SqliteStatements, t: SqliteTables, now: number, cap: number): number {
  const row = sql.get<{ n: number }>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${t.instances} WHERE ${DUE} AND ${sqliteUnpaused(t)} LIMIT ?)`,
    [now, now, cap],
  );
  return toNumber(row?.n ?? 0);
}

/** `countUndeclaredDue()`: due (a lapse before `dueBefore` counts) and of no declared pair, per pair, stopping at `cap`. */
export function countUndeclaredDue(
  sql: SqliteStatements,
  t: SqliteTables,
  query: WorkflowUndeclaredDueQuery,
): WorkflowUndeclaredDue[] {
  const declared =
    query.workflows.length === 0
      ? ''
      : ` AND (workflow, version) NOT IN (VALUES ${query.workflows.map(() => '(?, ?)').join(', ')})`;
  return sql
    .all<{ workflow: string; version: number; count: number }>(
      `SELECT workflow, version, COUNT(*) AS count FROM (
  SELECT workflow, version FROM ${t.instances} WHERE ${DUE} AND ${sqliteUnpaused(t)}${declared} LIMIT ?
) GROUP BY workflow, version ORDER BY workflow, version`,
      [query.dueBefore, query.dueBefore, ...query.workflows.flatMap(({ name, version }) => [name, version]), query.cap],
    )
    .map((row) => ({ workflow: row.workflow, version: toNumber(row.version), count: toNumber(row.count) }));
}
