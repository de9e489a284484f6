import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { historyOf, libraryVersion, type WorkflowHistory } from '../engine/workflow-history.js';
import type { WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowListPosition } from '../storage/workflow-store.js';

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

/** Which instances `exportHistories()` exports (the CLI's filter form). */
export interface WorkflowHistoryFilter {
  status?: WorkflowStatus[];
  workflow?: string;
  version?: number;
  /** At most this many, oldest first. Default: all that match. */
  limit?: number;
}

/**
 * Exports the instances matching `filter`, oldest first, handing each history to `each` (which
 * writes it somewhere) before the next is read; resolves to how many were exported. Keyset pages,
 * so instances created meanwhile never shift a page.
 */
export async function exportHistories(
  storage: WorkflowStorage,
  filter: WorkflowHistoryFilter,
  now: () => number,
  each: (history: WorkflowHistory) => Promise<void> | void,
): Promise<number> {
  const limit = filter.limit ?? Infinity;
  const version = libraryVersion();
  let exported = 0;
  let after: WorkflowListPosition | undefined;
  while (exported < limit) {
    const page = await storage.list({
      ...(filter.status === undefined ? {} : { status: filter.status }),
      ...(filter.workflow === undefined ? {} : { workflow: filter.workflow }),
      ...(filter.version === undefined ? {} : { version: filter.version }),
      ...(after === undefined ? {} : { after }),
      limit: Math.min(500, limit - exported),
      offset: 0,
    });
    for (const row of page) {
      const details = await storage.get(row.id, { journal: true });
      if (!details) continue; // deleted since the page was read
      await each(historyOf(details, version, now()));
      exported++;
    }
    if (page.length < 500) break;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
  return exported;
}
