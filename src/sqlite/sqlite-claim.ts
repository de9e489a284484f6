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

interface Candidate extends ClaimCandidate {
  id: string;
}

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

/** Up to `count` due instances of the claim's workflow versions, in claim order. */
function dueCandidates(
  sql: SqliteStatements,
  t: SqliteTables,
  request: WorkflowClaimRequest,
  count: number,
): Candidate[] {
  const versions = versionsFilter(request);
  return sql
    .all<{
      id: string;
      workflow: string;
      concurrency_key: string | null;
      rate_limit_key: string | null;
      terminate_requested: number;
    }>(
      `SELECT id, workflow, concurrency_key, rate_limit_key, terminate_requested FROM ${t.instances}
  WHERE ${DUE} AND ${versions.sql} AND ${sqliteUnpaused(t)} ORDER BY priority, wake_at, created_at, id LIMIT ?`,
      [request.now, request.now, ...versions.params, count],
    )
    .map((row) => ({
      id: row.id,
      workflow: row.workflow,
      concurrencyKey: row.concurrency_key,
      rateLimitKey: row.rate_limit_key,
      terminateRequested: toBoolean(row.terminate_requested),
    }));
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
