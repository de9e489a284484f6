import { replayWorkflowHistory, type ReplayDefinitions, type WorkflowReplayReport } from '../engine/history-replay.js';
import { replayStoredInstances, type WorkflowReplayFilter } from '../engine/stored-replays.js';
import { parseHistory } from '../engine/workflow-history.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';

/** A Nest application (or testing module) with `WorkflowsModule`: what `app.get()` takes, structurally. */
export interface WorkflowReplayApp {
  get(token: unknown, options?: { strict?: boolean }): unknown;
}

/** The engine's parts, for replays outside Nest: the workflows, and the storage `replayStored()` reads. */
export interface WorkflowReplayParts {
  registry: ReplayDefinitions;
  storage?: WorkflowStorage;
}

/** Where a replay finds the current code (and, for `replayStored()`, the store). */
export type WorkflowReplayTarget = WorkflowReplayApp | WorkflowReplayParts;

/**
 * Replays an exported history (`client.exportHistory()`, or a file `nest-workflows export-history`
 * wrote, parsed) against the application's current code: no step, sleep or child runs, nothing is
 * written. Resolves to `ok`, or `diverged` with the first journal entry that differs and why.
 * A value that is no history throws `WorkflowHistoryError`.
 */
export function replayHistory(app: WorkflowReplayTarget, history: unknown): Promise<WorkflowReplayReport> {
  const parsed = parseHistory(history);
  return replayWorkflowHistory(partsOf(app).registry, parsed);
}

/**
 * Replays the instances in the application's store that match `filter` (default: every unfinished
 * instance) against its current code, reading only: one report per instance, oldest first. Run it
 * in a deploy pipeline against the new code before that code meets the old instances.
 */
export async function replayStored(
  app: WorkflowReplayTarget,
  filter: WorkflowReplayFilter = {},
): Promise<WorkflowReplayReport[]> {
  const { registry, storage } = partsOf(app);
  if (!storage)
    throw new TypeError('replayStored() needs the storage to read: pass { registry, storage }, or the app.');
  return replayStoredInstances(storage, registry, filter, () => Date.now());
}

function partsOf(app: WorkflowReplayTarget): WorkflowReplayParts {
  if ('registry' in app) return app;
  const registry = app.get(WorkflowRegistry, { strict: false }) as WorkflowRegistry;
  const storage = app.get(WorkflowStorage, { strict: false }) as WorkflowStorage;
  return { registry, storage };
}
