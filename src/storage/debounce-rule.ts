import type { WorkflowInstance } from './workflow-instance.js';
import type { NewWorkflowInstance } from './workflow-store.js';

/**
 * Whether a debounced create may still change `instance` (see `WorkflowStore.create()`): never
 * claimed, never asked to stop. Once a claim leased it, its execution may already have read its
 * input, so a later start makes a new instance instead.
 */
export function notStarted(instance: WorkflowInstance): boolean {
  return (
    instance.status === 'pending' &&
    instance.runs === 0 &&
    instance.leaseToken === null &&
    !instance.cancelRequested &&
    !instance.terminateRequested
  );
}

/**
 * What a debounced create `init` changes in the instance of its burst, begun at `firstAt`: due at
 * its `wakeAt`, or at `firstAt + maxWait` when that comes sooner, its deadline moved with it (its
 * own run timeout from then), `updatedAt` now. The input is the store's to set.
 */
export function debouncedTimes(
  init: NewWorkflowInstance,
  instance: WorkflowInstance,
  firstAt: number,
): { wakeAt: number; deadline: number | null; updatedAt: number } {
  const due = init.wakeAt ?? init.now;
  const maxWait = init.debounce?.maxWait ?? null;
  const wakeAt = maxWait === null ? due : Math.min(due, firstAt + maxWait);
  return { wakeAt, deadline: instance.timeout === null ? null : wakeAt + instance.timeout, updatedAt: init.now };
}
