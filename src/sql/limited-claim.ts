import { toBoolean, toNumber, type SqlRow } from './workflow-rows.js';
import { rateWindowsOf, selectClaims, type ClaimCandidate, type ClaimUsage } from '../storage/claim-selection.js';
import type {
  WorkflowConcurrencyLimit,
  WorkflowRateLimitRule,
  WorkflowClaimRequest,
} from '../storage/workflow-store.js';

/** A due instance a limited claim may take. */
export interface LimitedCandidate extends ClaimCandidate {
  id: string;
}

/** A rate window's row as the claim writes it back. */
export interface RateWindowUpdate {
  workflow: string;
  key: string | null;
  windowEnd: number;
  count: number;
}

/**
 * What passes candidates over before they are even locked: the slots and windows already full. Never
 * a candidate with a terminate requested, which needs no room (see `ClaimCandidate`).
 */
export interface ClaimExclusions {
  fullWorkflows: string[];
  /** (workflow, concurrency key) pairs without a free slot. */
  fullKeys: Array<[string, string]>;
  /** Workflows whose own rate window is full. */
  fullOwnWindows: string[];
  /** (workflow, rate-limit key) pairs whose window is full. */
  fullKeyWindows: Array<[string, string]>;
}

/**
 * The statements of a claim under limits, each in the claim's transaction, in the order the
 * algorithm calls them; each SQL store writes them in its dialect.
 */
export interface LimitedClaimSteps<Result> {
  /** Locks each listed workflow's concurrency lock, in one order every claim shares. */
  lockWorkflows(workflows: string[]): Promise<void>;
  /**
   * In one snapshot: rows `{ kind: 'lease' | 'lapsed', workflow, key, count }` (leases per workflow
   * and concurrency key, of `limitWorkflows`, live or lapsed at `now`) and `{ kind: 'full' |
   * 'full-key', workflow, key }` (open windows of `rates` that are full).
   */
  usage(
    limitWorkflows: string[],
    rates: Array<{ workflow: string; max: number | null; keyMax: number | null }>,
  ): Promise<SqlRow[]>;
  /** Ends the leases of `workflows`' instances that lapsed at `now`: clears their token and `leaseUntil`. */
  revokeLapsed(workflows: string[]): Promise<void>;
  /**
   * Up to `count` due candidates in claim order, locked (skipping locked ones), minus those the
   * exclusions name unless a terminate was requested of them; each with its `terminate_requested`.
   */
  candidates(count: number, exclusions: ClaimExclusions): Promise<LimitedCandidate[]>;
  /** Locks the windows in the given order (creating missing ones as ended); rows as `rate_windows` holds them. */
  lockWindows(windows: Array<{ workflow: string; key: string | null }>): Promise<SqlRow[]>;
  /** Writes the windows back and leases `ids`; resolves to the claim's result. */
  lease(ids: string[], windows: RateWindowUpdate[]): Promise<Result>;
}

/**
 * How many candidates a claim under limits locks and looks at, for a claim of `limit`: a few more
 * than it may take (some may not fit), but not so many that concurrent claims find nothing left
 * unlocked to look at.
 */
function candidateCount(limit: number): number {
  return Math.min(limit * 2, limit + 100);
}

/** The request's limits and rate rules that apply to the workflows it claims (none: a plain claim). */
export function claimRules(request: WorkflowClaimRequest): {
  limits: WorkflowConcurrencyLimit[];
  rates: WorkflowRateLimitRule[];
} {
  const requested = new Set(request.workflows.map(({ name }) => name));
  return {
    limits: (request.limits ?? []).filter(
      (rule) => requested.has(rule.workflow) && (rule.limit !== null || rule.perKey !== null),
    ),
    rates: (request.rateLimits ?? []).filter((rule) => requested.has(rule.workflow) && (rule.limit || rule.perKey)),
  };
}

/**
 * `claim()` under concurrency and rate limits, in the caller's transaction: takes the limited
 * workflows' locks, counts live leases and full windows under them (ending the lapsed leases of
 * those workflows first, when there are any), locks candidates (passing over full workflows, keys
 * and windows, so a busy key never holds back the others, but never an instance to terminate,
 * which needs no room), selects with `selectClaims()`, locks the rate windows the selection takes
 * room in (in `rateWindowsOf()` order), selects again with the exact counts read under those
 * locks, and leases what is left.
 */
export async function claimUnderLimits<Result>(
  steps: LimitedClaimSteps<Result>,
  request: WorkflowClaimRequest,
): Promise<Result> {
  const { now } = request;
  const { limits, rates } = claimRules(request);
  const limitWorkflows = limits.map((rule) => rule.workflow);
  // Taken before counting, in one order every claim shares, so two claims never both take the last slot.
  if (limits.length > 0) await steps.lockWorkflows(limitWorkflows);

  const readUsage = () =>
    steps.usage(
      limitWorkflows,
      rates.map((rule) => ({
        workflow: rule.workflow,
        max: rule.limit?.max ?? null,
        keyMax: rule.perKey?.max ?? null,
      })),
    );
  let usageRows = await readUsage();
  if (usageRows.some((row) => row.kind === 'lapsed')) {
    // A lapsed lease holds no slot, so this claim may give its slot away; left standing, its holder
    // (stalled, not dead) could renew it and run beside the new lease, over the limit. Ended before
    // counting: a renewal that lands first is counted live by the second read, one that lands
    // after finds its token gone. Only after a crash or a stall, so the plain path pays nothing.
    await steps.revokeLapsed(limitWorkflows);
    usageRows = await readUsage();
  }
  const leasedByKey = new Map<string, number>();
  const leasedByWorkflow = new Map<string, number>();
  const exclusions: ClaimExclusions = { fullWorkflows: [], fullKeys: [], fullOwnWindows: [], fullKeyWindows: [] };
  for (const row of usageRows) {
    const workflow = String(row.workflow);
    const key = row.key === null || row.key === undefined ? null : String(row.key);
    const count = toNumber(row.count);
    if (row.kind === 'lease') {
      leasedByWorkflow.set(workflow, (leasedByWorkflow.get(workflow) ?? 0) + count);
      if (key !== null) leasedByKey.set(pairKey(workflow, key), count);
    } else if (row.kind === 'full') {
      exclusions.fullOwnWindows.push(workflow);
    } else if (row.kind === 'full-key' && key !== null) {
      exclusions.fullKeyWindows.push([workflow, key]);
    }
  }
  const leased = (workflow: string, key: string | null) =>
    key === null ? (leasedByWorkflow.get(workflow) ?? 0) : (leasedByKey.get(pairKey(workflow, key)) ?? 0);
  exclusions.fullWorkflows = limits
    .filter((rule) => rule.limit !== null && leased(rule.workflow, null) >= rule.limit)
    .map((rule) => rule.workflow);
  for (const rule of limits) {
    if (rule.perKey === null) continue;
    for (const [pair, count] of leasedByKey) {
      const [workflow, key] = JSON.parse(pair) as [string, string];
      if (workflow === rule.workflow && count >= rule.perKey) exclusions.fullKeys.push([workflow, key]);
    }
  }

  const candidates = await steps.candidates(candidateCount(request.limit), exclusions);
  // Windows not known to be full count as empty here; the second pass counts them exactly.
  let selection = selectClaims(candidates, request.limit, request, { leased, windowCount: () => 0 });

  const updates: RateWindowUpdate[] = [];
  // None when no selected candidate counts toward a window (another workflow's, one without a
  // rate-limit key under a per-key rule, or one to terminate): nothing to lock, count or write back.
  const windows = rates.length > 0 ? rateWindowsOf(selection.selected, rates) : [];
  if (windows.length > 0) {
    const locked = await steps.lockWindows(windows);
    const open = new Map<string, { windowEnd: number; count: number }>();
    for (const row of locked) {
      const windowEnd = toNumber(row.window_end);
      const key = toBoolean(row.has_key) ? String(row.key) : null;
      open.set(pairKey(String(row.workflow), key), { windowEnd, count: windowEnd > now ? toNumber(row.count) : 0 });
    }
    const usage: ClaimUsage = { leased, windowCount: (workflow, key) => open.get(pairKey(workflow, key))?.count ?? 0 };
    selection = selectClaims(selection.selected, request.limit, request, usage);
    for (const take of selection.windows) {
      const current = open.get(pairKey(take.workflow, take.key));
      const running = current !== undefined && current.windowEnd > now;
      updates.push({
        workflow: take.workflow,
        key: take.key,
        windowEnd: running ? current.windowEnd : now + take.duration,
        count: (running ? current.count : 0) + take.taken,
      });
    }
  }
  return steps.lease(
    selection.selected.map((candidate) => candidate.id),
    updates,
  );
}

/** A candidate from a row with `id`, `workflow`, `concurrency_key`, `rate_limit_key` and `terminate_requested`. */
export function toCandidate(row: SqlRow): LimitedCandidate {
  return {
    id: String(row.id),
    workflow: String(row.workflow),
    concurrencyKey:
      row.concurrency_key === null || row.concurrency_key === undefined ? null : String(row.concurrency_key),
    rateLimitKey: row.rate_limit_key === null || row.rate_limit_key === undefined ? null : String(row.rate_limit_key),
    terminateRequested: toBoolean(row.terminate_requested),
  };
}

function pairKey(workflow: string, key: string | null): string {
  return JSON.stringify([workflow, key]);
}
