import { SqlParams, type SqlDialect } from './sql-dialect.js';
import type { SqlExecutor } from './sql-executor.js';
import { toInstance, toSchedule } from './workflow-rows.js';
import { shownStatusCondition } from './status-lists.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowListQuery, WorkflowScheduleQuery, WorkflowScheduleRecord } from '../storage/workflow-store.js';

/** A statement and its parameters. */
export interface SqlStatement {
  sql: string;
  params: unknown[];
}

/**
 * `list()`: `prefix` (a `SELECT ... FROM instances`) with the query's filters and keyset position,
 * ordered by `created_at, id` (or both descending) and paged. Only the filters that are given
 * become conditions. Written so that an index on (..., created_at, id) serves each of them in
 * order on both dialects (PostgreSQL's migration 0002 and MySQL's 0002 have them by status and by
 * workflow).
 */
export function listInstancesStatement(dialect: SqlDialect, prefix: string, query: WorkflowListQuery): SqlStatement {
  const p = new SqlParams(dialect);
  const where: string[] = [];
  if (query.status !== undefined) where.push(shownStatusCondition(query.status, (statuses) => p.list(statuses)));
  if (query.workflow !== undefined) where.push(`workflow = ${p.add(query.workflow)}`);
  if (query.version !== undefined) where.push(`version = ${p.add(query.version)}`);
  if (query.parentId !== undefined) where.push(`parent_id = ${p.add(query.parentId)}`);
  if (query.scheduleId !== undefined) where.push(`schedule_id = ${p.add(query.scheduleId)}`);
  if (query.idPrefix !== undefined) {
    // LEFT() decides (so LIKE's % and _ are plain characters); the range lets the primary key's
    // byte-ordered index find the ids.
    where.push(`LEFT(id, ${[...query.idPrefix].length}) = ${p.add(query.idPrefix)}`, `id >= ${p.add(query.idPrefix)}`);
    const upper = prefixUpperBound(query.idPrefix);
    if (upper !== null) where.push(`id < ${p.add(upper)}`);
  }
  if (query.createdFrom !== undefined) where.push(`created_at >= ${p.add(query.createdFrom)}`);
  if (query.createdBefore !== undefined) where.push(`created_at < ${p.add(query.createdBefore)}`);
  const desc = query.order === 'desc';
  if (query.after !== undefined) {
    // Past (createdAt, id) in the order. The plain bound on created_at starts the index scan at the
    // position; the rest only sorts out the rows that share its createdAt.
    const [cmp, strict] = desc ? ['<=', '<'] : ['>=', '>'];
    const at = query.after.createdAt;
    where.push(
      `created_at ${cmp} ${p.add(at)}`,
      `(created_at ${strict} ${p.add(at)} OR id ${strict} ${p.add(query.after.id)})`,
    );
  }
  return page(p, prefix, where, desc ? 'created_at DESC, id DESC' : 'created_at, id', query);
}

/**
 * The smallest string above every string that starts with `prefix`, in byte (code point) order:
 * the prefix with its last character raised by one. `null` when that character can't simply be
 * raised (a surrogate, or just below them); LEFT() alone decides then.
 */
function prefixUpperBound(prefix: string): string | null {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (last >= 0xd7ff) return null;
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

/** `listSchedules()`: as `listInstancesStatement()`, ordered by `id`. */
export function listSchedulesStatement(
  dialect: SqlDialect,
  prefix: string,
  query: WorkflowScheduleQuery,
): SqlStatement {
  const p = new SqlParams(dialect);
  const where: string[] = [];
  if (query.workflow !== undefined) where.push(`workflow = ${p.add(query.workflow)}`);
  if (query.declared !== undefined) where.push(`declared = ${p.add(query.declared)}`);
  if (query.after !== undefined) where.push(`id > ${p.add(query.after)}`);
  return page(p, prefix, where, 'id', query);
}

function page(
  p: SqlParams,
  prefix: string,
  where: string[],
  order: string,
  query: { limit: number; offset: number },
): SqlStatement {
  const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  const sql = `${prefix}${filter} ORDER BY ${order} LIMIT ${p.add(query.limit)} OFFSET ${p.add(query.offset)}`;
  return { sql, params: p.values };
}

/** `list()` on a SQL store: `listInstancesStatement()` run on `executor`. */
export async function listInstances(
  executor: SqlExecutor,
  dialect: SqlDialect,
  prefix: string,
  query: WorkflowListQuery,
): Promise<WorkflowInstance[]> {
  const { sql, params } = listInstancesStatement(dialect, prefix, query);
  return (await executor.query(sql, params)).rows.map(toInstance);
}

/** `listSchedules()` on a SQL store: `listSchedulesStatement()` run on `executor`. */
export async function listSchedules(
  executor: SqlExecutor,
  dialect: SqlDialect,
  prefix: string,
  query: WorkflowScheduleQuery,
): Promise<WorkflowScheduleRecord[]> {
  const { sql, params } = listSchedulesStatement(dialect, prefix, query);
  return (await executor.query(sql, params)).rows.map(toSchedule);
}
