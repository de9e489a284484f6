import { SqlParams, type SqlDialect } from './sql-dialect.js';
import type { WorkflowListQuery, WorkflowScheduleQuery } from '../storage/workflow-store.js';

/** A statement and its parameters. */
export interface SqlStatement {
  sql: string;
  params: unknown[];
}

/**
 * `list()`: `prefix` (a `SELECT ... FROM instances`) with the query's filters, ordered by
 * `created_at, id` and paged. Only the filters that are given become conditions.
 */
export function listInstancesStatement(dialect: SqlDialect, prefix: string, query: WorkflowListQuery): SqlStatement {
  const p = new SqlParams(dialect);
  const where: string[] = [];
  if (query.status !== undefined) where.push(`status IN (${p.list(query.status)})`);
  if (query.workflow !== undefined) where.push(`workflow = ${p.add(query.workflow)}`);
  if (query.version !== undefined) where.push(`version = ${p.add(query.version)}`);
  if (query.parentId !== undefined) where.push(`parent_id = ${p.add(query.parentId)}`);
  if (query.scheduleId !== undefined) where.push(`schedule_id = ${p.add(query.scheduleId)}`);
  return page(p, prefix, where, 'created_at, id', query);
}

/** `listSchedules()`: as `listInstancesStatement()`, ordered by `id`. */
export function listSchedulesStatement(dialect: SqlDialect, prefix: string, query: WorkflowScheduleQuery): SqlStatement {
  const p = new SqlParams(dialect);
  const where: string[] = [];
  if (query.workflow !== undefined) where.push(`workflow = ${p.add(query.workflow)}`);
  if (query.declared !== undefined) where.push(`declared = ${p.add(query.declared)}`);
  return page(p, prefix, where, 'id', query);
}

function page(p: SqlParams, prefix: string, where: string[], order: string, query: { limit: number; offset: number }): SqlStatement {
  const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  const sql = `${prefix}${filter} ORDER BY ${order} LIMIT ${p.add(query.limit)} OFFSET ${p.add(query.offset)}`;
  return { sql, params: p.values };
}
