import { CLAIM_ORDER, dueWhere } from './mysql-claim-conditions.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import { FAIR_KEYS_PER_PRIORITY, fairShare } from '../sql/fair-claim.js';
import type { ClaimExclusions } from '../sql/limited-claim.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toNumber, type SqlRow } from '../sql/workflow-rows.js';
import type { WorkflowClaimRequest } from '../storage/workflow-store.js';

/** A round after every key's: what the claim takes in plain claim order. */
const LAST_ROUND = Number.MAX_SAFE_INTEGER;

/** One group a claim takes turns between: a priority's concurrency key, or its keyless instances (`key` null). */
export interface FairGroup {
  priority: number;
  key: string | null;
}

/**
 * The groups with instances in `instances_due_key`, by one loose index scan (GROUP BY on its first
 * two columns reads one entry per group), up to `FAIR_KEYS_PER_PRIORITY` + 1: more than one means
 * the claim takes turns.
 */
export async function fairGroups(executor: SqlExecutor, tables: MySqlTables): Promise<FairGroup[]> {
  const { rows } = await executor.query(
    `SELECT claim_priority AS p, concurrency_key AS k FROM ${tables.instances} FORCE INDEX (instances_due_key)
WHERE claim_priority IS NOT NULL GROUP BY claim_priority, concurrency_key ORDER BY claim_priority, concurrency_key LIMIT ?`,
    [FAIR_KEYS_PER_PRIORITY + 1],
  );
  return rows.map((row) => ({
    priority: toNumber(row.p),
    key: row.k === null || row.k === undefined ? null : String(row.k),
  }));
}

/**
 * Up to `count` due rows (`columns`) in the fair order, locked, skipping locked ones and those
 * `exclusions` names: each group's share (`fairShare()`) is read unlocked from `instances_due_key`
 * in one statement (a UNION of one bounded descent per group), numbered in rounds, cut where a
 * group gave its whole share (so no later priority goes before what it may still hold), then
 * locked by id (`SKIP LOCKED`); `plainWalk` (the locked walk of `instances_due`) fills the rest in
 * claim order, as a claim did before fair claims.
 */
export async function fairDue(
  tx: SqlExecutor,
  tables: MySqlTables,
  request: WorkflowClaimRequest,
  count: number,
  exclusions: ClaimExclusions | null,
  columns: string,
  groups: readonly FairGroup[],
  plainWalk: (count: number, notIds: readonly string[]) => Promise<SqlRow[]>,
): Promise<SqlRow[]> {
  if (groups.length <= 1) return plainWalk(count, []);
  const share = fairShare(count, groups.length);
  const where = dueWhere(tables, request, exclusions);
  const params: unknown[] = [];
  const parts = groups.map(({ priority, key }) => {
    params.push(priority, ...(key === null ? [] : [key]), ...where.params, share);
    // `=` and `IS NULL` rather than `<=>`: each part is then a range of the index, bounded by wake_at.
    return `(SELECT ${columns} FROM ${tables.instances} FORCE INDEX (instances_due_key)
WHERE claim_priority = ? AND concurrency_key ${key === null ? 'IS NULL' : '= ?'} AND ${where.sql}
ORDER BY wake_at, created_at, id LIMIT ?)`;
  });
  const { rows } = await tx.query(parts.join('\nUNION ALL\n'), params);
  const byGroup = new Map<string, SqlRow[]>();
  for (const row of rows) {
    const group = JSON.stringify([toNumber(row.priority), row.concurrency_key ?? null]);
    byGroup.set(group, [...(byGroup.get(group) ?? []), row]);
  }
  const round = new Map<string, number>();
  let saturated = Infinity;
  for (const members of byGroup.values()) {
    members.sort(claimOrder);
    members.forEach((row, index) => round.set(String(row.id), index + 1));
    if (members.length >= share) saturated = Math.min(saturated, toNumber(members[0]!.priority));
  }
  const picks = rows
    .filter((row) => toNumber(row.priority) <= saturated)
    .sort((a, b) => fairOrder(a, b, round))
    .slice(0, count);
  let taken: SqlRow[] = [];
  if (picks.length > 0) {
    const ids = picks.map((row) => String(row.id));
    ({ rows: taken } = await tx.query(
      `SELECT ${columns} FROM ${tables.instances} WHERE id IN (${placeholders(ids.length)}) AND ${where.sql}
ORDER BY ${CLAIM_ORDER} FOR UPDATE SKIP LOCKED`,
      [...ids, ...where.params],
    ));
  }
  const room = count - taken.length;
  const filler =
    room > 0
      ? await plainWalk(
          room,
          taken.map((row) => String(row.id)),
        )
      : [];
  return [...taken, ...filler].sort((a, b) => fairOrder(a, b, round));
}

function claimOrder(a: SqlRow, b: SqlRow): number {
  return (
    toNumber(a.wake_at) - toNumber(b.wake_at) ||
    toNumber(a.created_at) - toNumber(b.created_at) ||
    (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0)
  );
}

function fairOrder(a: SqlRow, b: SqlRow, round: ReadonlyMap<string, number>): number {
  return (
    toNumber(a.priority) - toNumber(b.priority) ||
    (round.get(String(a.id)) ?? LAST_ROUND) - (round.get(String(b.id)) ?? LAST_ROUND) ||
    claimOrder(a, b)
  );
}
