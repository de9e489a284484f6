import type { CreateResult } from './create-batch.js';
import { fromJson, toJson } from './workflow-rows.js';
import { debouncedTimes, notStarted } from '../storage/debounce-rule.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** The statements of a debounced create, each in one transaction, in the order `debouncedCreate()` calls them. */
export interface DebounceSteps {
  /**
   * Inserts the key's row (naming `id`, its burst begun at `now`) unless it exists, and locks it
   * until commit either way; resolves to the row as it then stands.
   */
  lockKey(workflow: string, key: string, id: string, now: number): Promise<{ instanceId: string; firstAt: number }>;
  /** The instance `id`, locked until commit, or `null`. */
  lockInstance(id: string): Promise<WorkflowInstance | null>;
  /** Sets the locked instance's input (JSON text) and times. */
  update(
    id: string,
    input: string,
    times: { wakeAt: number; deadline: number | null; updatedAt: number },
  ): Promise<void>;
  /** Points the key's row at `id`, its burst begun at `now`. */
  pointKey(workflow: string, key: string, id: string, now: number): Promise<void>;
  /** `create()` of `init` (which has no `debounce`), in this transaction. */
  insert(init: NewWorkflowInstance): Promise<CreateResult>;
}

/**
 * `create()` with `debounce` (the rule is `WorkflowStore.create()`'s), in one transaction: the
 * key's row is locked first, so debounced creates of one key take turns from any process; the
 * instance it names is locked next (a claim passes over a locked row, and a claim that leased it
 * first is seen here), then updated while it has not started, else a new one is created and the
 * key points at it.
 */
export async function debouncedCreate(steps: DebounceSteps, init: NewWorkflowInstance): Promise<CreateResult> {
  const { key } = init.debounce!;
  const row = await steps.lockKey(init.workflow, key, init.id, init.now);
  if (row.instanceId !== init.id) {
    const found = await steps.lockInstance(row.instanceId);
    if (found && notStarted(found)) {
      const input = toJson(init.input ?? null)!;
      const times = debouncedTimes(init, found, row.firstAt);
      await steps.update(found.id, input, times);
      return { instance: { ...found, ...times, input: fromJson(input) }, created: false };
    }
    await steps.pointKey(init.workflow, key, init.id, init.now);
  }
  const { debounce: _, ...plain } = init;
  return steps.insert(plain);
}
