import type { PostgresClaimStatements } from './postgres-claim-statements.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toInstance, toNumber, toBoolean, type SqlRow } from '../sql/workflow-rows.js';
import { rateWindowsOf, selectClaims, type ClaimCandidate, type ClaimUsage } from '../storage/claim-selection.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowClaim, WorkflowClaimRequest } from '../storage/workflow-store.js';

/**
 * How many candidates a claim under limits locks and looks at, for a claim of `limit`: a few more
 * than it may take (some may not fit), but not so many that concurrent claims find nothing left
 * unlocked to look at.
 */
function candidateCount(limit: number): number {
  return Math.min(limit * 2, limit + 100);
}

/**
 * `WorkflowStore.claim()` on PostgreSQL. Without limits on the requested workflows: one statement
 * (pick with `FOR UPDATE SKIP LOCKED`, lease, read the last signal id). With limits: one
 * transaction that takes the limited workflows' advisory locks in hash order, counts live leases
 * and full windows under them, locks candidates (skipping full workflows, keys and windows, so a
 * busy key never holds back the others), selects with the shared `selectClaims()`, locks the rate
 * windows the selection takes room in (in `rateWindowsOf()` order), selects again with the exact
 * counts read under those locks, and leases what is left.
 */
export async function claimInstances(
  executor: SqlExecutor,
  statements: PostgresClaimStatements,
  request: WorkflowClaimRequest,
): Promise<WorkflowClaim> {
  const { now } = request;
  const names = request.workflows.map(({ name }) => name);
  const versions = request.workflows.map(({ version }) => version);
  const requested = new Set(names);
  const limits = (request.limits ?? []).filter(
    (rule) => requested.has(rule.workflow) && (rule.limit !== null || rule.perKey !== null),
  );
  const rates = (request.rateLimits ?? []).filter((rule) => requested.has(rule.workflow) && (rule.limit || rule.perKey));

  if (limits.length === 0 && rates.length === 0) {
    const { rows } = await executor.query(statements.claim, [
      now,
      names,
      versions,
      request.limit,
      request.token,
      request.owner,
      request.leaseUntil,
    ]);
    return toClaim(rows);
  }

  return executor.transaction(async (tx) => {
    // Taken before counting, in one order every claim shares, so two claims never both take the last slot.
    if (limits.length > 0) await tx.query(statements.lockWorkflows, [limits.map((rule) => statements.concurrencyLockPrefix + rule.workflow)]);

    const { rows: usageRows } = await tx.query(statements.claimUsage, [
      limits.map((rule) => rule.workflow),
      now,
      rates.map((rule) => rule.workflow),
      rates.map((rule) => rule.limit?.max ?? null),
      rates.map((rule) => rule.perKey?.max ?? null),
    ]);
    const leasedByKey = new Map<string, number>();
    const leasedByWorkflow = new Map<string, number>();
    const fullOwnWindows: string[] = [];
    const fullKeyWindows: Array<[string, string]> = [];
    for (const row of usageRows) {
      const workflow = String(row.workflow);
      const key = row.key === null || row.key === undefined ? null : String(row.key);
      const count = toNumber(row.count);
      if (row.kind === 'lease') {
        leasedByWorkflow.set(workflow, (leasedByWorkflow.get(workflow) ?? 0) + count);
        if (key !== null) leasedByKey.set(pairKey(workflow, key), count);
      } else if (row.kind === 'full') {
        fullOwnWindows.push(workflow);
      } else if (key !== null) {
        fullKeyWindows.push([workflow, key]);
      }
    }
    const leased = (workflow: string, key: string | null) =>
      key === null ? (leasedByWorkflow.get(workflow) ?? 0) : (leasedByKey.get(pairKey(workflow, key)) ?? 0);
    const fullWorkflows = limits
      .filter((rule) => rule.limit !== null && leased(rule.workflow, null) >= rule.limit)
      .map((rule) => rule.workflow);
    const fullKeys: Array<[string, string]> = [];
    for (const rule of limits) {
      if (rule.perKey === null) continue;
      for (const [pair, count] of leasedByKey) {
        const [workflow, key] = JSON.parse(pair) as [string, string];
        if (workflow === rule.workflow && count >= rule.perKey) fullKeys.push([workflow, key]);
      }
    }

    const { rows: candidateRows } = await tx.query(statements.claimCandidates, [
      now,
      names,
      versions,
      candidateCount(request.limit),
      fullWorkflows,
      fullKeys.map(([workflow]) => workflow),
      fullKeys.map(([, key]) => key),
      fullOwnWindows,
      fullKeyWindows.map(([workflow]) => workflow),
      fullKeyWindows.map(([, key]) => key),
    ]);
    const candidates = candidateRows.map(toCandidate);
    // Windows not known to be full count as empty here; the second pass counts them exactly.
    let selection = selectClaims(candidates, request.limit, request, { leased, windowCount: () => 0 });

    let windowUpdate: [string[], boolean[], string[], number[], number[]] = [[], [], [], [], []];
    if (rates.length > 0 && selection.selected.length > 0) {
      const windows = rateWindowsOf(selection.selected, rates);
      const { rows: locked } = await tx.query(statements.lockRateWindows, [
        windows.map((window) => window.workflow),
        windows.map((window) => window.key !== null),
        windows.map((window) => window.key ?? ''),
      ]);
      const open = new Map<string, { windowEnd: number; count: number }>();
      for (const row of locked) {
        const windowEnd = toNumber(row.window_end);
        const key = toBoolean(row.has_key) ? String(row.key) : null;
        open.set(pairKey(String(row.workflow), key), { windowEnd, count: windowEnd > now ? toNumber(row.count) : 0 });
      }
      const usage: ClaimUsage = { leased, windowCount: (workflow, key) => open.get(pairKey(workflow, key))?.count ?? 0 };
      selection = selectClaims(selection.selected, request.limit, request, usage);
      windowUpdate = [[], [], [], [], []];
      for (const take of selection.windows) {
        const current = open.get(pairKey(take.workflow, take.key));
        const running = current !== undefined && current.windowEnd > now;
        windowUpdate[0].push(take.workflow);
        windowUpdate[1].push(take.key !== null);
        windowUpdate[2].push(take.key ?? '');
        windowUpdate[3].push(running ? current.windowEnd : now + take.duration);
        windowUpdate[4].push((running ? current.count : 0) + take.taken);
      }
    }

    const { rows } = await tx.query(statements.leaseLocked, [
      now,
      selection.selected.map((candidate) => candidate.id),
      request.token,
      request.owner,
      request.leaseUntil,
      ...windowUpdate,
    ]);
    return toClaim(rows);
  });
}

interface Candidate extends ClaimCandidate {
  id: string;
}

function toCandidate(row: SqlRow): Candidate {
  return {
    id: String(row.id),
    workflow: String(row.workflow),
    concurrencyKey: row.concurrency_key === null ? null : String(row.concurrency_key),
    rateLimitKey: row.rate_limit_key === null ? null : String(row.rate_limit_key),
  };
}

function toClaim(rows: SqlRow[]): WorkflowClaim {
  const instances: WorkflowInstance[] = [];
  for (const row of rows) if (row.id !== null && row.id !== undefined) instances.push(toInstance(row));
  return { instances, lastSignalId: rows.length > 0 ? toNumber(rows[0]!.last_signal_id) : 0 };
}

function pairKey(workflow: string, key: string | null): string {
  return JSON.stringify([workflow, key]);
}
