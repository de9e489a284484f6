import { CLAIM_ORDER, dueWhere, type Statement } from './mysql-claim-conditions.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import { FAIR_KEYS_PER_PRIORITY, fairShare } from '../sql/fair-claim.js';
import type { ClaimExclusions } from '../sql/limited-claim.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toNumber, type SqlRow } from '../sql/workflow-rows.js';
import { UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowClaimRequest } from '../storage/workflow-store.js';

/** A round after every key's: what the claim takes in plain claim order. */
const LAST_ROUND = Number.MAX_SAFE_INTEGER;

/** What the fair order reads of a group's due instances before it locks any. */
const FAIR_COLUMNS = 'id, priority, concurrency_key, wake_at, created_at';

/** One group a claim takes turns between: a priority's concurrency key, or its keyless instances (`key` null). */
export interface FairGroup {
  priority: number;
  key: string | null;
  /**
   * The earliest `wake_at` of its entries that are due (leased ones and other workflows' too): none
   * of its instances the claim may take is due earlier.
   */
  earliest: number;
}

/** What a claim may take from, as `dueGroups()` read it. */
export interface DueGroups {
  /** The groups with due entries among the first `FAIR_KEYS_PER_PRIORITY` + 1: more than one means the claim takes turns. */
  groups: FairGroup[];
  /** The priorities of `instances_due` that may hold due instances, ascending; none: nothing is. */
  priorities: number[];
}

/**
 * The groups of `instances_due_key` with due entries, each with its earliest `wake_at`, by one loose
 * index scan (GROUP BY on its first two columns with MIN of the third: two descents per group and
 * none through a group's entries; migration 0011 made the index one MariaDB reads so) of the first
 * `FAIR_KEYS_PER_PRIORITY` + 1 groups in priority and key order, asleep or due (so a fleet of keys
 * whose instances all sleep costs a claim that many descents at most; due keys past them are claimed
 * in plain order, as PostgreSQL's walk of 1,000 keys does), and the priorities a claim walks: those
 * of the due groups, and when there were more groups than that, the last one read and every later
 * priority of `instances_due` too (one descent each). A claim walks `instances_due` one priority at a time (see
 * `dueWhere()`), so sleeping instances cost it nothing.
 */
export async function dueGroups(executor: SqlExecutor, tables: MySqlTables, now: number): Promise<DueGroups> {
  const { rows } = await executor.query(
    `SELECT claim_priority AS p, concurrency_key AS k, MIN(wake_at) AS w FROM ${tables.instances} FORCE INDEX (instances_due_key)
WHERE claim_priority IS NOT NULL GROUP BY claim_priority, concurrency_key ORDER BY claim_priority, concurrency_key LIMIT ?`,
    [FAIR_KEYS_PER_PRIORITY + 1],
  );
  const found = rows.map((row) => ({
    priority: toNumber(row.p),
    key: row.k === null || row.k === undefined ? null : String(row.k),
    earliest: toNumber(row.w),
  }));
  // A group whose every entry sleeps takes no turn, and its priority needs no walk.
  const groups = found.filter((group) => group.earliest <= now);
  const priorities = [...new Set(groups.map((group) => group.priority))];
  if (found.length > FAIR_KEYS_PER_PRIORITY) {
    // Groups past the ones read may be due: their priorities are the last one read and those after.
    for (let last: number | null = found.at(-1)!.priority; last !== null;) {
      if (!priorities.includes(last)) priorities.push(last);
      const { rows: next } = await executor.query(
        `SELECT MIN(claim_priority) AS p FROM ${tables.instances} WHERE claim_priority > ?`,
        [last],
      );
      last = next[0]?.p === null || next[0]?.p === undefined ? null : toNumber(next[0].p);
    }
  }
  return { groups, priorities };
}

/** A claim's fair picks, unlocked (`fairPicks()`). */
export interface FairPicks {
  /** Up to `count` rows (`FAIR_COLUMNS`) in the fair order. */
  picks: SqlRow[];
  /** Each row's round (its place in its group's share); rows of no round come after every round of their priority. */
  round: ReadonlyMap<string, number>;
  /** `dueWhere()` as the picks were read, which they must still meet when locked. */
  where: Statement;
}

/**
 * A claim's picks in the fair order, read unlocked: each group's share (`fairShare()`) from
 * `instances_due_key` (a UNION of one bounded descent per group, `FAIR_COLUMNS` only; with a share
 * of one, as many groups as `count` or more, only the groups that may hold one of the `count`
 * oldest heads: `heads()`), numbered in rounds, cut where a group gave its whole share (so no later
 * priority goes before what it may still hold). For more than one group and at least one priority.
 */
export async function fairPicks(
  executor: SqlExecutor,
  tables: MySqlTables,
  request: WorkflowClaimRequest,
  count: number,
  exclusions: ClaimExclusions | null,
  due: DueGroups,
): Promise<FairPicks> {
  const share = fairShare(count, due.groups.length);
  const where = dueWhere(tables, request, exclusions, due.priorities);
  const running = await runningByKey(executor, tables, request);
  const rows =
    share === 1
      ? await heads(executor, tables, where, due.groups, count, running)
      : await shares(executor, tables, where, due.groups, share);
  const byGroup = new Map<string, SqlRow[]>();
  for (const row of rows) {
    const group = JSON.stringify([toNumber(row.priority), row.concurrency_key ?? null]);
    byGroup.set(group, [...(byGroup.get(group) ?? []), row]);
  }
  const round = new Map<string, number>();
  let saturated = Infinity;
  for (const members of byGroup.values()) {
    members.sort(claimOrder);
    const before = runningUnder(running, members[0]!.concurrency_key);
    members.forEach((row, index) => round.set(String(row.id), before + index + 1));
    if (members.length >= share) saturated = Math.min(saturated, toNumber(members[0]!.priority));
  }
  const picks = rows
    .filter((row) => toNumber(row.priority) <= saturated)
    .sort((a, b) => fairOrder(a, b, round))
    .slice(0, count);
  return { picks, round, where };
}

/**
 * Up to `count` due rows (`columns`) in the fair order, locked, skipping locked ones and those
 * `exclusions` names: the picks (`fairPicks()`), locked by id (`SKIP LOCKED`: one another claim
 * holds is passed over), then `plainWalk` (the locked walk of `instances_due`) fills the rest in
 * claim order, as a claim did before fair claims.
 */
export async function fairDue(
  tx: SqlExecutor,
  tables: MySqlTables,
  request: WorkflowClaimRequest,
  count: number,
  exclusions: ClaimExclusions | null,
  columns: string,
  due: DueGroups,
  plainWalk: (count: number, notIds: readonly string[]) => Promise<SqlRow[]>,
): Promise<SqlRow[]> {
  if (due.priorities.length === 0) return [];
  if (due.groups.length <= 1) return plainWalk(count, []);
  const { picks, round, where } = await fairPicks(tx, tables, request, count, exclusions, due);
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

/** Up to `share` due rows of each of `groups` in claim order, unlocked (`FAIR_COLUMNS`). */
async function shares(
  tx: SqlExecutor,
  tables: MySqlTables,
  where: Statement,
  groups: readonly FairGroup[],
  share: number,
): Promise<SqlRow[]> {
  const params: unknown[] = [];
  const parts = groups.map(({ priority, key }) => {
    params.push(priority, ...(key === null ? [] : [key]), ...where.params, share);
    // `=` and `IS NULL` rather than `<=>`: each part is then a range of the index, bounded by wake_at.
    return `(SELECT ${FAIR_COLUMNS} FROM ${tables.instances} FORCE INDEX (instances_due_key)
WHERE claim_priority = ? AND concurrency_key ${key === null ? 'IS NULL' : '= ?'} AND ${where.sql}
ORDER BY wake_at, created_at, id LIMIT ?)`;
  });
  return (await tx.query(parts.join('\nUNION ALL\n'), params)).rows;
}

/**
 * The instances of the claim's workflows running now, by concurrency key: turns their keys already
 * had. Read from `instances_lapsed` (leases by end), so it costs one entry per lease held.
 */
async function runningByKey(
  executor: SqlExecutor,
  tables: MySqlTables,
  request: WorkflowClaimRequest,
): Promise<ReadonlyMap<string | null, number>> {
  const names = [...new Set(request.workflows.map(({ name }) => name))];
  const { rows } = await executor.query(
    `SELECT concurrency_key AS k, COUNT(*) AS n FROM ${tables.instances} FORCE INDEX (instances_lapsed)
WHERE lease_until >= ? AND lease_token IS NOT NULL AND status IN ${UNFINISHED} AND workflow IN (${placeholders(names.length)})
GROUP BY concurrency_key`,
    [request.now, ...names],
  );
  return new Map(rows.map((row) => [keyOf(row.k), toNumber(row.n)]));
}

/** A concurrency key as a row holds it: `null` for none. */
function keyOf(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** How many instances of key `key` (a row's value) `running` counts. */
function runningUnder(running: ReadonlyMap<string | null, number>, key: unknown): number {
  return running.get(keyOf(key)) ?? 0;
}

/**
 * With a share of one: the first due row of enough groups that the first `count` of all groups'
 * first rows in the fair order at the first priority that has any are among them. A group's first
 * row is in turn `running + 1`. Groups are read in batches of `count`, by priority, then turn, then
 * `earliest`, which no group's first row the claim may take comes before: once `count` rows are read
 * at that priority, a group of a later turn, or of the same turn and an `earliest` later than the
 * last of them, can't hold one that goes before it (ties are read), so at 100 keys a claim of 10
 * reads about 10 groups instead of 100.
 */
async function heads(
  tx: SqlExecutor,
  tables: MySqlTables,
  where: Statement,
  groups: readonly FairGroup[],
  count: number,
  running: ReadonlyMap<string | null, number>,
): Promise<SqlRow[]> {
  const turnOf = (key: unknown) => runningUnder(running, key) + 1;
  const order = [...groups].sort(
    (a, b) => a.priority - b.priority || turnOf(a.key) - turnOf(b.key) || a.earliest - b.earliest,
  );
  const found: SqlRow[] = [];
  for (let next = 0; next < order.length;) {
    const batch = order.slice(next, next + count);
    next += batch.length;
    found.push(...(await shares(tx, tables, where, batch, 1)));
    if (found.length === 0) continue;
    const first = Math.min(...found.map((row) => toNumber(row.priority)));
    const following = order[next];
    if (!following || following.priority > first) break;
    const atFirst = found
      .filter((row) => toNumber(row.priority) === first)
      .sort((a, b) => turnOf(a.concurrency_key) - turnOf(b.concurrency_key) || claimOrder(a, b));
    const last = atFirst[count - 1];
    if (!last) continue;
    const [turn, lastTurn] = [turnOf(following.key), turnOf(last.concurrency_key)];
    if (turn > lastTurn || (turn === lastTurn && following.earliest > toNumber(last.wake_at))) break;
  }
  return found;
}

function claimOrder(a: SqlRow, b: SqlRow): number {
  return (
    toNumber(a.wake_at) - toNumber(b.wake_at) ||
    toNumber(a.created_at) - toNumber(b.created_at) ||
    (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0)
  );
}

/** The fair order of two rows (`priority`, `wake_at`, `created_at`, `id`), `round` as `fairPicks()` gave it. */
export function fairOrder(a: SqlRow, b: SqlRow, round: ReadonlyMap<string, number>): number {
  return (
    toNumber(a.priority) - toNumber(b.priority) ||
    (round.get(String(a.id)) ?? LAST_ROUND) - (round.get(String(b.id)) ?? LAST_ROUND) ||
    claimOrder(a, b)
  );
}
