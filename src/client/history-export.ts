import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { historyOf, libraryVersion, type WorkflowHistory } from '../engine/workflow-history.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';

/**
 * `client.exportHistory(id)`: the instance read with its journal, decoded by the configured codec
 * (a payload no codec can read throws `WorkflowPayloadError` rather than export a hole), as a
 * plain-JSON `WorkflowHistory`. Throws `WorkflowNotFoundError` for an unknown id.
 */
export async function exportHistory(storage: WorkflowStorage, id: string, now: number): Promise<WorkflowHistory> {
  if (typeof id !== 'string' || id === '') {
    throw new TypeError(`exportHistory() needs an instance id (a non-empty string); got ${JSON.stringify(id)}.`);
  }
  const details = await storage.get(id, { journal: true });
  if (!details) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
  return historyOf(details, libraryVersion(), now);
}
