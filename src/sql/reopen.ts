import { distinctEntries } from './distinct-entries.js';
import type { SqlExecutor } from './sql-executor.js';
import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { WorkflowReopen } from '../storage/workflow-store.js';

/**
 * A dialect's statements of `reopen()`, which `reopenInstance()` runs in order. `Values` is the
 * reopen's journal and error as the dialect sends them.
 */
export interface ReopenStatements<Values> {
  /**
   * `apply` checks the reopen's conditions itself: a reopen that waits for no child is that one
   * statement, with neither the lock nor a transaction.
   */
  readonly conditional: boolean;
  /** The journal entries (each name once) and the error as `apply` sends them: made before any statement. */
  encode(id: string, reopen: WorkflowReopen, entries: readonly WorkflowJournalEntry[]): Values;
  /** Runs `fn` in a transaction of the store's own on `executor`. */
  transaction<T>(executor: SqlExecutor, fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Locks the instance row while the reopen's conditions hold (`expect`, no live lease at `now`): whether they do. */
  lock(tx: SqlExecutor, id: string, reopen: WorkflowReopen): Promise<boolean>;
  /** Whether each of `children` exists and is unfinished or has its end stored (`awaitedChildren`). */
  childrenReachable(tx: SqlExecutor, children: readonly string[]): Promise<boolean>;
  /** The reopen: the row, its journal and the retracted signal; whether it landed. */
  apply(executor: SqlExecutor, id: string, reopen: WorkflowReopen, values: Values): Promise<boolean>;
}

/**
 * `WorkflowStore.reopen()` on a SQL store: lock the row, check the awaited children, apply. The row
 * is locked first and the children read after it, each statement seeing what committed before it:
 * a purge() or delete() that took a child since the caller's check refuses the reopen, with
 * nothing changed.
 */
export function reopenInstance<Values>(
  executor: SqlExecutor,
  statements: ReopenStatements<Values>,
  id: string,
  reopen: WorkflowReopen,
): Promise<boolean> {
  const values = statements.encode(id, reopen, distinctEntries(reopen.entries));
  const children = reopen.awaitedChildren ?? [];
  if (children.length === 0 && statements.conditional) return statements.apply(executor, id, reopen, values);
  return statements.transaction(executor, async (tx) => {
    if (!(await statements.lock(tx, id, reopen))) return false;
    if (children.length > 0 && !(await statements.childrenReachable(tx, children))) return false;
    return statements.apply(tx, id, reopen, values);
  });
}
