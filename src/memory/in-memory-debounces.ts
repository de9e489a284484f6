import { debouncedTimes, notStarted } from '../storage/debounce-rule.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** The instance a debounce key last made, and when its burst began. */
interface DebounceEntry {
  id: string;
  firstAt: number;
}

/**
 * `InMemoryWorkflowStore`'s debounce keys: per workflow name and key, the instance the last
 * debounced create made. Synchronous from the lookup to the change, so two debounced creates of
 * one key never both create (the rule `WorkflowStore.create()` states for every store).
 */
export class InMemoryDebounces {
  private readonly keys = new Map<string, DebounceEntry>();

  /**
   * The not yet started instance of `init`'s key (found through `instance`), changed to `init`'s
   * input (`input`, as stored) and times, or `null` when the create must make one (then `made()`).
   */
  replace(
    init: NewWorkflowInstance,
    input: unknown,
    instance: (id: string) => WorkflowInstance | undefined,
  ): WorkflowInstance | null {
    const entry = this.keys.get(keyOf(init));
    if (!entry) return null;
    const found = instance(entry.id);
    if (!found || !notStarted(found)) return null;
    Object.assign(found, debouncedTimes(init, found, entry.firstAt), { input });
    return found;
  }

  /** The key of `init` now names `id`, which it just created: a burst begins. */
  made(init: NewWorkflowInstance, id: string): void {
    this.keys.set(keyOf(init), { id, firstAt: init.now });
  }

  /** `purge()`: drops up to `limit` keys whose instance (found through `instance`) has started or is gone; returns how many. */
  purge(limit: number, instance: (id: string) => WorkflowInstance | undefined): number {
    let dropped = 0;
    for (const [key, entry] of this.keys) {
      if (dropped >= limit) break;
      const found = instance(entry.id);
      if (found && found.runs === 0) continue;
      this.keys.delete(key);
      dropped++;
    }
    return dropped;
  }
}

function keyOf(init: NewWorkflowInstance): string {
  return JSON.stringify([init.workflow, init.debounce!.key]);
}
