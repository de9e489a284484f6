import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** What `create()` resolves to. */
export interface CreateResult {
  instance: WorkflowInstance;
  created: boolean;
}

/**
 * Answers the `create()` calls of one batch: `insert` gets the first call of each id, in call order,
 * and resolves to an answer for every one of those ids (`created` when this batch inserted it).
 * That call gets the answer; a repeat of the id in the batch (even of the same object) gets the
 * stored instance, not created, as a concurrent create would.
 */
export async function answerCreates<Pending extends { init: NewWorkflowInstance }>(
  batch: readonly Pending[],
  insert: (firsts: Pending[]) => Promise<ReadonlyMap<string, CreateResult>>,
): Promise<CreateResult[]> {
  const firsts = new Map<string, Pending>();
  for (const pending of batch) if (!firsts.has(pending.init.id)) firsts.set(pending.init.id, pending);
  const stored = await insert([...firsts.values()]);
  const answered = new Set<string>();
  return batch.map(({ init }) => {
    const answer = stored.get(init.id)!;
    if (answered.has(init.id)) return { instance: answer.instance, created: false };
    answered.add(init.id);
    return answer;
  });
}
