import type { PostgresClaimStatements } from './postgres-claim-statements.js';
import { claimRules, claimUnderLimits, toCandidate, type LimitedClaimSteps } from '../sql/limited-claim.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toInstance, toNumber, type SqlRow } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowClaim, WorkflowClaimRequest } from '../storage/workflow-store.js';

/**
 * `WorkflowStore.claim()` on PostgreSQL. With `ids` (a notification named them): one statement that
 * takes those of them that are free, by key. Without limits on the requested workflows: one
 * statement (pick with `FOR UPDATE SKIP LOCKED`, lease, read the last signal id). With limits: the
 * shared `claimUnderLimits()` in one transaction, the workflows' concurrency locks being advisory
 * locks taken in hash order.
 */
export async function claimInstances(
  executor: SqlExecutor,
  statements: PostgresClaimStatements,
  request: WorkflowClaimRequest,
): Promise<WorkflowClaim> {
  const { now } = request;
  const names = request.workflows.map(({ name }) => name);
  const versions = request.workflows.map(({ version }) => version);
  const { limits, rates } = claimRules(request);

  if (request.ids !== undefined && request.ids.length > 0) {
    // Named instances (a notification's start): by key, only of workflows no limit counts (a
    // limited claim takes their locks first). The caller claims as usual for those not taken.
    const limited = new Set([...limits, ...rates].map((rule) => rule.workflow));
    const open = limited.size === 0 ? request.workflows : request.workflows.filter(({ name }) => !limited.has(name));
    if (open.length > 0) {
      const ids = request.ids.slice(0, request.limit);
      const params = [
        now,
        open.map(({ name }) => name),
        open.map(({ version }) => version),
        ids,
        request.token,
        request.owner,
        request.leaseUntil,
      ];
      return toClaim((await executor.query(statements.claimByIds, params)).rows);
    }
  }

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

  return executor.transaction((tx) => {
    const steps: LimitedClaimSteps<WorkflowClaim> = {
      async lockWorkflows(workflows) {
        await tx.query(statements.lockWorkflows, [
          workflows.map((workflow) => statements.concurrencyLockPrefix + workflow),
        ]);
      },
      async usage(limitWorkflows, rateRules) {
        const { rows } = await tx.query(statements.claimUsage, [
          limitWorkflows,
          now,
          rateRules.map((rule) => rule.workflow),
          rateRules.map((rule) => rule.max),
          rateRules.map((rule) => rule.keyMax),
        ]);
        return rows;
      },
      async revokeLapsed(workflows) {
        await tx.query(statements.revokeLapsed, [workflows, now]);
      },
      async candidates(count, exclusions) {
        const { rows } = await tx.query(statements.claimCandidates, [
          now,
          names,
          versions,
          count,
          exclusions.fullWorkflows,
          exclusions.fullKeys.map(([workflow]) => workflow),
          exclusions.fullKeys.map(([, key]) => key),
          exclusions.fullOwnWindows,
          exclusions.fullKeyWindows.map(([workflow]) => workflow),
          exclusions.fullKeyWindows.map(([, key]) => key),
        ]);
        return rows.map(toCandidate);
      },
      async lockWindows(windows) {
        const { rows } = await tx.query(statements.lockRateWindows, [
          windows.map((window) => window.workflow),
          windows.map((window) => window.key !== null),
          windows.map((window) => window.key ?? ''),
        ]);
        return rows;
      },
      async lease(ids, windows) {
        const { rows } = await tx.query(statements.leaseLocked, [
          now,
          ids,
          request.token,
          request.owner,
          request.leaseUntil,
          windows.map((window) => window.workflow),
          windows.map((window) => window.key !== null),
          windows.map((window) => window.key ?? ''),
          windows.map((window) => window.windowEnd),
          windows.map((window) => window.count),
        ]);
        return toClaim(rows);
      },
    };
    return claimUnderLimits(steps, request);
  });
}

function toClaim(rows: SqlRow[]): WorkflowClaim {
  const instances: WorkflowInstance[] = [];
  for (const row of rows) if (row.id !== null && row.id !== undefined) instances.push(toInstance(row));
  return { instances, lastSignalId: rows.length > 0 ? toNumber(rows[0]!.last_signal_id) : 0 };
}
