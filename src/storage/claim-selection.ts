import type { WorkflowConcurrencyLimit, WorkflowRateLimitRule } from './workflow-store.js';

/** What the selection reads of a due instance. */
export interface ClaimCandidate {
  workflow: string;
  concurrencyKey: string | null;
  rateLimitKey: string | null;
  /**
   * A terminate was requested: the claim only ends the instance (no step, no compensation, no
   * user code), so it needs no room in a slot or a window and takes none.
   */
  terminateRequested: boolean;
}

/**
 * What is already taken when a claim starts, as the store counts it under its locks (in SQL: after
 * locking the limited workflows and the window rows, so the counts can't move until commit).
 */
export interface ClaimUsage {
  /**
   * Instances of `workflow` (every version) holding a live lease (`leaseUntil >= now`); with a
   * `concurrencyKey`, only those with that key.
   */
  leased(workflow: string, concurrencyKey: string | null): number;
  /**
   * Claims counted in the open window (`windowEnd > now`) of the workflow's own rate limit
   * (`rateLimitKey` null) or of one rate-limit key; 0 when that window ended or never opened.
   */
  windowCount(workflow: string, rateLimitKey: string | null): number;
}

/** The limits of one claim request. */
export interface ClaimRules {
  limits?: readonly WorkflowConcurrencyLimit[];
  rateLimits?: readonly WorkflowRateLimitRule[];
}

/** How many claims the selection put into one rate window (`key` null: the workflow's own window). */
export interface RateWindowTake {
  workflow: string;
  key: string | null;
  /** The window's length, for opening it when it is not open. */
  duration: number;
  taken: number;
}

export interface ClaimSelection<T> {
  /** The candidates to lease, in claim order. */
  selected: T[];
  /** The room the selected candidates take in rate windows; the store adds it to each window. */
  windows: RateWindowTake[];
}

/** One count a candidate must have room in: concurrency slots, or a rate window (with its `duration`). */
interface Bucket {
  id: string;
  workflow: string;
  key: string | null;
  capacity: number;
  duration?: number;
}

/**
 * Picks, from `candidates` in claim order, up to `limit` that fit the request's concurrency slots
 * and rate windows. It walks the candidates once and takes each one that still has room in every
 * bucket it counts toward (its workflow's slots, its concurrency key's slots, its workflow's window,
 * its rate-limit key's window), counting what it already took: a candidate without room is passed
 * over rather than ending the walk, so one busy key never holds back the candidates behind it. A
 * candidate with `terminateRequested` counts toward no bucket: it is taken whatever is full, and
 * leaves the room it would have taken to the candidates behind it.
 *
 * Pure, so SQL stores can reuse it: lock the limited workflows and the window rows (see
 * `rateWindowsOf()`) in a fixed order, count under those locks, call this, then lease `selected`
 * and write `windows` back, all before commit. Without rules it simply takes the first `limit`.
 */
export function selectClaims<T extends ClaimCandidate>(
  candidates: readonly T[],
  limit: number,
  rules: ClaimRules,
  usage: ClaimUsage,
): ClaimSelection<T> {
  const concurrency = byWorkflow(rules.limits);
  const rates = byWorkflow(rules.rateLimits);
  if (concurrency.size === 0 && rates.size === 0) return { selected: candidates.slice(0, limit), windows: [] };

  const used = new Map<string, number>();
  const windows = new Map<string, RateWindowTake>();
  const selected: T[] = [];
  for (const candidate of candidates) {
    if (selected.length >= limit) break;
    const buckets = bucketsOf(candidate, concurrency.get(candidate.workflow), rates.get(candidate.workflow));
    const fits = buckets.every((bucket) => {
      let count = used.get(bucket.id);
      if (count === undefined) {
        count =
          bucket.duration === undefined
            ? usage.leased(bucket.workflow, bucket.key)
            : usage.windowCount(bucket.workflow, bucket.key);
        used.set(bucket.id, count);
      }
      return count < bucket.capacity;
    });
    if (!fits) continue;
    for (const bucket of buckets) {
      used.set(bucket.id, (used.get(bucket.id) ?? 0) + 1);
      if (bucket.duration === undefined) continue;
      const take = windows.get(bucket.id) ?? {
        workflow: bucket.workflow,
        key: bucket.key,
        duration: bucket.duration,
        taken: 0,
      };
      take.taken += 1;
      windows.set(bucket.id, take);
    }
    selected.push(candidate);
  }
  return { selected, windows: [...windows.values()] };
}

/**
 * The requested workflows whose concurrency slots a claim counts (a `limit` or a `perKey`): before
 * counting, it ends their lapsed leases (see `WorkflowStore.claim()`).
 */
export function slotLimitedWorkflows(request: {
  workflows: ReadonlyArray<{ name: string }>;
  limits?: readonly WorkflowConcurrencyLimit[];
}): Set<string> {
  const requested = new Set(request.workflows.map(({ name }) => name));
  const limited = new Set<string>();
  for (const rule of request.limits ?? []) {
    if (requested.has(rule.workflow) && (rule.limit !== null || rule.perKey !== null)) limited.add(rule.workflow);
  }
  return limited;
}

/**
 * The rate windows `candidates` could take room in, each once, ordered by workflow then key (the
 * workflow's own window first). SQL stores lock these rows (inserting missing ones) in this order,
 * which every claim shares, so two claims never wait on each other in a cycle.
 */
export function rateWindowsOf(
  candidates: readonly ClaimCandidate[],
  rateLimits: readonly WorkflowRateLimitRule[] | undefined,
): Array<{ workflow: string; key: string | null }> {
  const rates = byWorkflow(rateLimits);
  const found = new Map<string, { workflow: string; key: string | null }>();
  for (const candidate of candidates) {
    for (const bucket of bucketsOf(candidate, undefined, rates.get(candidate.workflow))) {
      found.set(bucket.id, { workflow: bucket.workflow, key: bucket.key });
    }
  }
  return [...found.values()].sort(
    (a, b) =>
      compare(a.workflow, b.workflow) ||
      (a.key === b.key ? 0 : a.key === null ? -1 : b.key === null ? 1 : compare(a.key, b.key)),
  );
}

function bucketsOf(
  candidate: ClaimCandidate,
  concurrency: WorkflowConcurrencyLimit | undefined,
  rate: WorkflowRateLimitRule | undefined,
): Bucket[] {
  const { workflow, concurrencyKey, rateLimitKey } = candidate;
  const buckets: Bucket[] = [];
  // Ending a terminated instance runs none of its code: an operator's terminate never waits for a
  // slot or a window that long executions hold.
  if (candidate.terminateRequested) return buckets;
  // Ids are prefixed by kind (`s`lots, `r`ate windows): a workflow's slots and its window are two counts.
  if (concurrency?.limit != null) {
    buckets.push({ id: `s${JSON.stringify([workflow, null])}`, workflow, key: null, capacity: concurrency.limit });
  }
  if (concurrency?.perKey != null && concurrencyKey !== null) {
    const id = `s${JSON.stringify([workflow, concurrencyKey])}`;
    buckets.push({ id, workflow, key: concurrencyKey, capacity: concurrency.perKey });
  }
  if (rate?.limit) {
    const { max, duration } = rate.limit;
    buckets.push({ id: `r${JSON.stringify([workflow, null])}`, workflow, key: null, capacity: max, duration });
  }
  if (rate?.perKey && rateLimitKey !== null) {
    const { max, duration } = rate.perKey;
    buckets.push({
      id: `r${JSON.stringify([workflow, rateLimitKey])}`,
      workflow,
      key: rateLimitKey,
      capacity: max,
      duration,
    });
  }
  return buckets;
}

function byWorkflow<T extends { workflow: string }>(rules: readonly T[] | undefined): Map<string, T> {
  const map = new Map<string, T>();
  for (const rule of rules ?? []) map.set(rule.workflow, rule);
  return map;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
