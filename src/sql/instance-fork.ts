import type { CreateResult } from './create-batch.js';
import type { SqlExecutor } from './sql-executor.js';
import type { WorkflowFork } from '../storage/workflow-store.js';

/** A dialect's statements of `fork()` after the create: the fork's origin and its journal. */
export interface ForkStatements {
  /** Sets `forked_from` and `forked_from_step` of the new row and inserts its journal (each name once, in order), on `tx`. */
  record(tx: SqlExecutor, fork: WorkflowFork): Promise<void>;
}

/**
 * `WorkflowStore.fork()` on a SQL store, on `tx` (a transaction of the store's own, or the
 * application's): the create (`create()`'s insert-or-ignore), then, only when it created the row,
 * the origin and the journal. One transaction, so a claim never sees the fork without its journal
 * (it would run it from the top); an existing id is returned untouched.
 */
export async function forkWith(
  tx: SqlExecutor,
  create: (tx: SqlExecutor) => Promise<CreateResult>,
  statements: ForkStatements,
  fork: WorkflowFork,
): Promise<CreateResult> {
  const result = await create(tx);
  if (!result.created) return result;
  await statements.record(tx, fork);
  result.instance.forkedFrom = { id: fork.from.id, step: fork.from.step };
  return result;
}
