import { FAIR_KEYS_PER_PRIORITY, fairOrder, fairShare, type FairCandidate } from '../sql/fair-claim.js';
import { UNFINISHED } from '../sql/status-lists.js';
import { toBoolean, toInstance, toNumber } from '../sql/workflow-rows.js';
import {
  selectClaims,
  slotLimitedWorkflows,
  type ClaimCandidate,
  type ClaimUsage,
} from '../storage/claim-selection.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowClaim, WorkflowClaimRequest } from '../storage/workflow-store.js';
import { lastSignalId } from './sqlite-signals.js';
import { placeholders, type SqliteStatements } from './sqlite-statements.js';
import { DUE, INSTANCE_COLUMNS, type SqliteTables } from './sqlite-tables.js';
import { sqliteUnpaused } from './sqlite-pauses.js';

interface Candidate extends ClaimCandidate, FairCandidate {}

/** In the claim's partial indexes (`instances_due`, `instances_due_key`): what a claim may take someday. */
const IN_DUE_INDEX = `status IN ${UNFINISHED} AND wake_at IS NOT NULL`;

/** `(workflow, version) IN (VALUES ...)` for the claim's workflow versions, with its parameters. */
function versionsFilter(request: Pick<WorkflowClaimRequest, 'workflows'>): { sql: string; params: unknown[] } {
  const params = request.workflows.flatMap(({ name, version }) => [name, version]);
  const values = request.workflows.map(() => '(?, ?)').join(', ');
  return { sql: `(workflow, version) IN (VALUES ${values})`, params };
}

/**
 * Whether anything is due for the claim, read without the write lock: an idle worker's claim
 * (most claims, on a quiet system) then never queues behind other processes' writes.
 */
export function anythingDue(sql: SqliteStatements, t: SqliteTables, request: WorkflowClaimRequest): boolean {
  const versions = versionsFilter(request);
  return (
    sql.get(`SELECT 1 AS found FROM ${t.instances} WHERE ${DUE} AND ${versions.sql} AND ${sqliteUnpaused(t)} LIMIT 1`, [
      request.now,
      request.now,
      ...versions.params,
    ]) !== undefined
  );
}

/**
 * `claim()` in the caller's write transaction. The write lock stands in for row locks: no other
 * claim, renewal or write of any process runs until this one commits, so counting slots and
 * windows, choosing and leasing are one step, and no instance is handed to two holders. Under
 * limits, lapsed leases of the limited workflows end first (their holders could renew them into a
 * slot beside this claim's), candidates are read in claim order and `selectClaims()` passes over
 * those without room; more are read while fewer than `limit` fit.
 */
export function claimDue(sql: SqliteStatements, t: SqliteTables, request: WorkflowClaimRequest): WorkflowClaim {
  const { now } = request;
  const limited = [...slotLimitedWorkflows(request)];
  if (limited.length > 0) {
    sql.run(
      `UPDATE ${t.instances} SET lease_token = NULL, lease_until = NULL
  WHERE workflow IN (${placeholders(limited.length)}) AND lease_token IS NOT NULL AND lease_until < ?`,
      [...limited, now],
    );
  }
  const usage: ClaimUsage = {
    leased: (workflow, key) =>
      toNumber(
        sql.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM ${t.instances} WHERE workflow = ? AND lease_token IS NOT NULL AND lease_until >= ?` +
            (key === null ? '' : ' AND concurrency_key = ?'),
          key === null ? [workflow, now] : [workflow, now, key],
        )!.n,
      ),
    windowCount: (workflow, key) => {
      const row = sql.get<{ window_end: number; count: number }>(
        `SELECT window_end, count FROM ${t.rateWindows} WHERE workflow = ? AND has_key = ? AND key = ?`,
        [workflow, key === null ? 0 : 1, key ?? ''],
      );
      return row && toNumber(row.window_end) > now ? toNumber(row.count) : 0;
    },
  };
  const limitedClaim = limited.length > 0 || (request.rateLimits?.length ?? 0) > 0;
  let wanted = request.limit;
  let candidates = dueCandidates(sql, t, request, wanted);
  let selection = selectClaims(candidates, request.limit, request, usage);
  while (limitedClaim && selection.selected.length < request.limit && candidates.length === wanted) {
    wanted *= 4;
    candidates = dueCandidates(sql, t, request, wanted);
    selection = selectClaims(candidates, request.limit, request, usage);
  }
  for (const take of selection.windows) {
    sql.run(
      `INSERT INTO ${t.rateWindows} (workflow, has_key, key, window_end, count) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (workflow, has_key, key) DO UPDATE SET
    count = CASE WHEN window_end > ? THEN count + excluded.count ELSE excluded.count END,
    window_end = CASE WHEN window_end > ? THEN window_end ELSE excluded.window_end END`,
      [take.workflow, take.key === null ? 0 : 1, take.key ?? '', now + take.duration, take.taken, now, now],
    );
  }
  const ids = selection.selected.map((candidate) => candidate.id);
  for (const id of ids) {
    sql.run(
      `UPDATE ${t.instances} SET lease_token = ?, lease_owner = ?, lease_until = ?, runs = runs + 1, updated_at = ?,
  status = CASE WHEN status = 'compensating' THEN status ELSE 'running' END WHERE id = ?`,
      [request.token, request.owner, request.leaseUntil, now, id],
    );
  }
  return { instances: readInOrder(sql, t, ids), lastSignalId: lastSignalId(sql, t) };
}

/**
 * Up to `count` due instances of the claim's workflow versions, in the fair order (`fairOrder()`):
 * within a priority, across concurrency keys in turn. The groups are found by loose index scans
 * (one descent per priority and per key: `instances_due` for the priorities, `instances_due_key`
 * for each priority's keys, its keyless instances being one more group); each group then gives
 * its share from `instances_due_key`, beside the first `count` in plain claim order.
 */
function dueCandidates(
  sql: SqliteStatements,
  t: SqliteTables,
  request: WorkflowClaimRequest,
  count: number,
): Candidate[] {
  const versions = versionsFilter(request);
  const columns = 'id, workflow, concurrency_key, rate_limit_key, terminate_requested, priority, wake_at, created_at';
  const due = `${DUE} AND ${versions.sql} AND ${sqliteUnpaused(t)}`;
  const dueParams = [request.now, request.now, ...versions.params];
  const plain = sql
    .all<CandidateRow>(
      `SELECT ${columns} FROM ${t.instances} WHERE ${due} ORDER BY priority, wake_at, created_at, id LIMIT ?`,
      [...dueParams, count],
    )
    .map(toCandidateRow);
  if (plain.length === 0) return [];
  const groups: Array<{ priority: number; key: string | null }> = [];
  for (let priority: number | undefined = plain[0]!.priority; priority !== undefined;) {
    groups.push({ priority, key: null });
    let key = sql.get<{ k: string }>(
      `SELECT concurrency_key AS k FROM ${t.instances} INDEXED BY ${t.dueKeyIndex}
  WHERE ${IN_DUE_INDEX} AND priority = ? AND concurrency_key IS NOT NULL ORDER BY concurrency_key LIMIT 1`,
      [priority],
    )?.k;
    for (let found = 0; key !== undefined && found < FAIR_KEYS_PER_PRIORITY; found++) {
      groups.push({ priority, key });
      key = sql.get<{ k: string }>(
        `SELECT concurrency_key AS k FROM ${t.instances} INDEXED BY ${t.dueKeyIndex}
  WHERE ${IN_DUE_INDEX} AND priority = ? AND concurrency_key > ? ORDER BY concurrency_key LIMIT 1`,
        [priority, key],
      )?.k;
    }
    priority = sql.get<{ p: number }>(
      `SELECT priority AS p FROM ${t.instances} WHERE ${IN_DUE_INDEX} AND priority > ? ORDER BY priority LIMIT 1`,
      [priority],
    )?.p;
    // Past the last priority the plain order reached, a group could give nothing the claim takes.
    if (priority !== undefined && priority > plain[plain.length - 1]!.priority) break;
  }
  const share = fairShare(count, groups.length);
  // The instances of the claim's workflows running now under a key: turns the key already had.
  const names = [...new Set(request.workflows.map(({ name }) => name))];
  const running = new Map<string | null, number>();
  const runningUnder = (key: string | null): number => {
    if (groups.length === 1) return 0; // a lone group takes no turns
    let n = running.get(key);
    if (n === undefined) {
      n = sql.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM ${t.instances} INDEXED BY ${t.leasedIndex}
  WHERE workflow IN (${placeholders(names.length)}) AND concurrency_key ${key === null ? 'IS NULL' : '= ?'} AND lease_until >= ?
    AND lease_token IS NOT NULL AND status IN ${UNFINISHED}`,
        [...names, ...(key === null ? [] : [key]), request.now],
      )!.n;
      running.set(key, n);
    }
    return n;
  };
  const rounds = groups.flatMap(({ priority, key }) =>
    sql
      .all<CandidateRow>(
        `SELECT ${columns} FROM ${t.instances} INDEXED BY ${t.dueKeyIndex}
  WHERE priority = ? AND concurrency_key ${key === null ? 'IS NULL' : '= ?'} AND ${due} ORDER BY wake_at, created_at, id LIMIT ?`,
        [priority, ...(key === null ? [] : [key]), ...dueParams, share],
      )
      .map((row, index) => ({ ...toCandidateRow(row), round: runningUnder(key) + index + 1 })),
  );
  return fairOrder(rounds, plain, count);
}

interface CandidateRow {
  id: string;
  workflow: string;
  concurrency_key: string | null;
  rate_limit_key: string | null;
  terminate_requested: number;
  priority: number;
  wake_at: number;
  created_at: number;
}

function toCandidateRow(row: CandidateRow): Candidate {
  return {
    id: row.id,
    workflow: row.workflow,
    concurrencyKey: row.concurrency_key,
    rateLimitKey: row.rate_limit_key,
    terminateRequested: toBoolean(row.terminate_requested),
    priority: toNumber(row.priority),
    wakeAt: toNumber(row.wake_at),
    createdAt: toNumber(row.created_at),
  };
}

/** The instances `ids` as stored now, in the order of `ids`. */
function readInOrder(sql: SqliteStatements, t: SqliteTables, ids: readonly string[]): WorkflowInstance[] {
  if (ids.length === 0) return [];
  const byId = new Map<string, WorkflowInstance>();
  for (const row of sql.all(
    `SELECT ${INSTANCE_COLUMNS} FROM ${t.instances} WHERE id IN (${placeholders(ids.length)})`,
    ids,
  )) {
    const instance = toInstance(row);
    byId.set(instance.id, instance);
  }
  return ids.map((id) => byId.get(id)!);
}
