import { PAUSED_STATUS, UNFINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowListPosition } from '../storage/workflow-store.js';
import { replayWorkflowHistory, type ReplayDefinitions, type WorkflowReplayReport } from './history-replay.js';
import { historyOf, libraryVersion } from './workflow-history.js';

/** Which stored instances `replayStored()` replays. */
export interface WorkflowReplayFilter {
  /** Default: every unfinished status, `paused` included (a resume meets the code too). */
  status?: WorkflowStatus | WorkflowStatus[];
  workflow?: string;
  version?: number;
  /** At most this many instances, oldest first. Default: all that match. */
  limit?: number;
  /** Instances read and replayed at once. Default 8. */
  concurrency?: number;
}

const PAGE = 500;

/**
 * Replays the stored instances matching `filter` (by default every unfinished one) against
 * `definitions`, reading each with its journal and writing nothing, oldest first; resolves to one
 * report per instance, in that order. Keyset pages, so instances created meanwhile never shift a page.
 */
export async function replayStoredInstances(
  storage: WorkflowStorage,
  definitions: ReplayDefinitions,
  filter: WorkflowReplayFilter,
  now: () => number,
): Promise<WorkflowReplayReport[]> {
  const status: WorkflowStatus[] =
    filter.status === undefined ? [...UNFINISHED_STATUSES, PAUSED_STATUS] : [filter.status].flat();
  const limit = filter.limit ?? Infinity;
  const concurrency = Math.max(1, filter.concurrency ?? 8);
  const version = libraryVersion();
  const reports: WorkflowReplayReport[] = [];
  let after: WorkflowListPosition | undefined;
  while (reports.length < limit) {
    const page = await storage.list({
      status,
      ...(filter.workflow === undefined ? {} : { workflow: filter.workflow }),
      ...(filter.version === undefined ? {} : { version: filter.version }),
      ...(after === undefined ? {} : { after }),
      limit: Math.min(PAGE, limit - reports.length),
      offset: 0,
    });
    if (page.length === 0) break;
    const results = new Array<WorkflowReplayReport | null>(page.length).fill(null);
    let next = 0;
    const lane = async () => {
      for (let index = next++; index < page.length; index = next++) {
        const details = await storage.get(page[index]!.id, { journal: true });
        // Deleted since the page was read: nothing left to replay.
        if (details) results[index] = await replayWorkflowHistory(definitions, historyOf(details, version, now()));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, page.length) }, lane));
    for (const result of results) if (result) reports.push(result);
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
    if (page.length < PAGE) break;
  }
  return reports;
}
