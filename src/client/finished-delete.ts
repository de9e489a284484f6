import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';

/**
 * `WorkflowClient.delete()`: deletes finished instance `id` and its journal, or throws why it
 * can't (`read` reads it, `WorkflowNotFoundError` when unknown): it is unfinished, or a child of
 * an unfinished parent, which may not have taken the child's end yet (kept from `purge()` only
 * through the child).
 */
export async function deleteFinished(
  storage: Pick<WorkflowStorage, 'delete' | 'get'>,
  id: string,
  read: () => Promise<WorkflowInstance>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await storage.delete(id, FINISHED_STATUSES)) return;
    // The store refused in one statement; read why. A parent that ended since makes the child deletable.
    const current = await read();
    if (!FINISHED_STATUSES.includes(current.status)) {
      throw new WorkflowInvalidStateError(
        `Instance "${id}" is ${current.status}: only finished instances can be deleted. Cancel or terminate it first.`,
      );
    }
    const parent = current.parentId === null ? null : await storage.get(current.parentId, { readable: true });
    if (parent !== null && !FINISHED_STATUSES.includes(parent.status)) {
      throw new WorkflowInvalidStateError(
        `Instance "${id}" is a child of instance "${parent.id}", which is ${parent.status}: the parent may still wait for this child's end, ` +
          'which would be lost with the child. Let the parent end first (or cancel or terminate it), then delete the child.',
      );
    }
    if (attempt === 3)
      throw new WorkflowInvalidStateError(
        `Instance "${id}" changed while it was being deleted. Read its status and try again.`,
      );
  }
}
