import { UNFINISHED_STATUSES, type WorkflowInstance, type WorkflowStatus } from './workflow-instance.js';

const UNFINISHED: ReadonlySet<WorkflowStatus> = new Set(UNFINISHED_STATUSES);

/**
 * The instances of `InMemoryWorkflowStore` a claim could take: every unfinished one, so a claim
 * walks those instead of every instance ever created (a test suite's store fills up with finished
 * ones, and a `drain()` claims once per slot-full). The store calls `add()` whenever an instance
 * gets an unfinished status and `remove()` when it deletes one; finished instances are dropped
 * from here the next time a claim meets them.
 */
export class ClaimableInstances {
  private readonly live = new Set<WorkflowInstance>();

  add(instance: WorkflowInstance): void {
    if (UNFINISHED.has(instance.status)) this.live.add(instance);
  }

  remove(instance: WorkflowInstance): void {
    this.live.delete(instance);
  }

  /**
   * The unfinished instances due at `now` that `accepts` takes, in claim order (priority, then
   * `wakeAt`, `createdAt`, id). With `top`, only the first `top` of that order: what a claim
   * without concurrency or rate limits leases, found in one pass without sorting the rest.
   */
  due(now: number, accepts: (instance: WorkflowInstance) => boolean, top?: number): WorkflowInstance[] {
    const found: WorkflowInstance[] = [];
    if (top !== undefined && top <= 0) return found;
    for (const instance of this.live) {
      if (!UNFINISHED.has(instance.status)) {
        this.live.delete(instance);
        continue;
      }
      if (instance.wakeAt === null || instance.wakeAt > now) continue;
      // With `top` already found, one comparison passes over most candidates before `accepts` runs.
      const full = top !== undefined && found.length === top;
      if (full && claimOrder(instance, found[top - 1]!) >= 0) continue;
      if (!accepts(instance)) continue;
      if (top === undefined) found.push(instance);
      else {
        if (full) found.pop();
        insertSorted(found, instance);
      }
    }
    return top === undefined ? found.sort(claimOrder) : found;
  }
}

/** Inserts `instance` into `sorted` (claim order) after every element that does not come after it. */
function insertSorted(sorted: WorkflowInstance[], instance: WorkflowInstance): void {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (claimOrder(sorted[middle]!, instance) <= 0) low = middle + 1;
    else high = middle;
  }
  sorted.splice(low, 0, instance);
}

function claimOrder(a: WorkflowInstance, b: WorkflowInstance): number {
  return (
    a.priority - b.priority ||
    a.wakeAt! - b.wakeAt! ||
    a.createdAt - b.createdAt ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
