import { plainCopy } from '../storage/plain-copy.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type {
  WorkflowListPosition,
  WorkflowListQuery,
  WorkflowUndeclaredDue,
  WorkflowUndeclaredDueQuery,
} from '../storage/workflow-store.js';

/**
 * `list()` over instances held in memory: the filters, the order (`createdAt`, then `id` by UTF-16
 * code units, which agrees with the SQL stores' byte order except between characters above U+FFFF
 * and those from U+E000 to U+FFFF), the keyset position and the page. Returns the stored objects
 * themselves: the caller copies them.
 */
export function listPage(instances: Iterable<WorkflowInstance>, query: WorkflowListQuery): WorkflowInstance[] {
  const statuses = query.status ? new Set(query.status) : null;
  const direction = query.order === 'desc' ? -1 : 1;
  const order = (a: WorkflowListPosition, b: WorkflowListPosition) =>
    direction * (a.createdAt - b.createdAt || compareIds(a.id, b.id));
  const found: WorkflowInstance[] = [];
  for (const instance of instances) {
    if (statuses && !statuses.has(instance.status)) continue;
    if (query.workflow !== undefined && instance.workflow !== query.workflow) continue;
    if (query.version !== undefined && instance.version !== query.version) continue;
    if (query.parentId !== undefined && instance.parentId !== query.parentId) continue;
    if (query.scheduleId !== undefined && instance.scheduleId !== query.scheduleId) continue;
    if (query.idPrefix !== undefined && !instance.id.startsWith(query.idPrefix)) continue;
    if (query.createdFrom !== undefined && instance.createdAt < query.createdFrom) continue;
    if (query.createdBefore !== undefined && instance.createdAt >= query.createdBefore) continue;
    if (query.after !== undefined && order(instance, query.after) <= 0) continue;
    found.push(instance);
  }
  found.sort(order);
  return found.slice(query.offset, query.offset + query.limit);
}

/** Ids in the order every store sorts them (see `listPage()`). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A lease holds until `leaseUntil` inclusive; after that, any claim may take the instance over. */
export function hasLiveLease(instance: WorkflowInstance, now: number): boolean {
  return instance.leaseToken !== null && instance.leaseUntil !== null && instance.leaseUntil >= now;
}

/** Due now, unless it already is (an earlier `wakeAt` stays: it is the more overdue one). */
export function makeDue(instance: WorkflowInstance, now: number): void {
  if (instance.wakeAt === null || instance.wakeAt > now) instance.wakeAt = now;
  instance.updatedAt = now;
}

/** The key of a rate window: its workflow and rate-limit key (`null`: the workflow's own). */
export function windowKey(workflow: string, key: string | null): string {
  return JSON.stringify([workflow, key]);
}

/** `countDue()` over instances held in memory: unfinished, due at `now`, no live lease; up to `cap`. */
export function countDue(instances: Iterable<WorkflowInstance>, now: number, cap: number): number {
  let due = 0;
  for (const instance of instances) {
    if (due >= cap) break;
    if (
      !FINISHED_STATUSES.includes(instance.status) &&
      instance.wakeAt !== null &&
      instance.wakeAt <= now &&
      !hasLiveLease(instance, now)
    )
      due += 1;
  }
  return due;
}

/** `countUndeclaredDue()` over instances held in memory (see `WorkflowStore.countUndeclaredDue`). */
export function countUndeclaredDue(
  instances: Iterable<WorkflowInstance>,
  query: WorkflowUndeclaredDueQuery,
): WorkflowUndeclaredDue[] {
  const declared = new Set(query.workflows.map(({ name, version }) => JSON.stringify([name, version])));
  const counts = new Map<string, WorkflowUndeclaredDue>();
  let found = 0;
  for (const instance of instances) {
    if (found >= query.cap) break;
    if (FINISHED_STATUSES.includes(instance.status) || instance.wakeAt === null || instance.wakeAt > query.dueBefore)
      continue;
    if (instance.leaseToken !== null && (instance.leaseUntil === null || instance.leaseUntil >= query.dueBefore))
      continue;
    const key = JSON.stringify([instance.workflow, instance.version]);
    if (declared.has(key)) continue;
    found += 1;
    const count = counts.get(key);
    if (count) count.count += 1;
    else counts.set(key, { workflow: instance.workflow, version: instance.version, count: 1 });
  }
  return [...counts.values()].sort((a, b) => compareIds(a.workflow, b.workflow) || a.version - b.version);
}

/** Instances of `workflow` holding a live lease at `now`, with `concurrencyKey` unless it is null. */
export function countLeased(
  instances: Iterable<WorkflowInstance>,
  workflow: string,
  concurrencyKey: string | null,
  now: number,
): number {
  let count = 0;
  for (const instance of instances) {
    if (instance.workflow !== workflow || !hasLiveLease(instance, now)) continue;
    if (concurrencyKey === null || instance.concurrencyKey === concurrencyKey) count += 1;
  }
  return count;
}

/**
 * A stored instance copied out: `plainCopy()` of it, field by field. Every stored instance is made
 * by `create()` with exactly these fields, in this order, so the copy has the same keys; written
 * out, it costs a fraction of the generic walk (a claim copies every instance it leases).
 */
export function copyInstance(instance: WorkflowInstance): WorkflowInstance {
  return {
    id: instance.id,
    workflow: instance.workflow,
    version: instance.version,
    status: instance.status,
    input: plainCopy(instance.input),
    output: plainCopy(instance.output),
    error: plainCopy(instance.error),
    customStatus: plainCopy(instance.customStatus),
    parentId: instance.parentId,
    parentClose: instance.parentClose,
    concurrencyKey: instance.concurrencyKey,
    rateLimitKey: instance.rateLimitKey,
    priority: instance.priority,
    scheduleId: instance.scheduleId,
    scheduledAt: instance.scheduledAt,
    deadline: instance.deadline,
    timeout: instance.timeout,
    wakeAt: instance.wakeAt,
    runs: instance.runs,
    signalCursor: instance.signalCursor,
    leaseToken: instance.leaseToken,
    leaseOwner: instance.leaseOwner,
    leaseUntil: instance.leaseUntil,
    cancelRequested: instance.cancelRequested,
    terminateRequested: instance.terminateRequested,
    cancelReason: instance.cancelReason,
    traceContext: instance.traceContext === null ? null : { ...instance.traceContext },
    createdAt: instance.createdAt,
    updatedAt: instance.updatedAt,
    ...(instance.forkedFrom ? { forkedFrom: { ...instance.forkedFrom } } : undefined),
  };
}
