import type { EngineLogger } from '../engine/workflow-engine.js';
import type { ReplayDefinitions } from '../engine/history-replay.js';
import { replayStoredInstances } from '../engine/stored-replays.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';

/** The workflows a process runs, and how to reach their code: what the startup check replays against. */
export interface CheckedDefinitions extends ReplayDefinitions {
  versions(): Array<{ name: string; version: number }>;
}

/**
 * `worker.replayCheck`: for each workflow version this process runs, replays up to `sample` of its
 * unfinished instances (the oldest first, the likeliest to have gone past a change) against this
 * process's code, reading only, and warns for each that would diverge, naming the entry and the
 * reason. Resolves to how many diverge. A store failure is reported as a warning too: the check
 * must never keep a worker from starting.
 */
export async function checkReplaysAtStartup(
  storage: WorkflowStorage,
  definitions: CheckedDefinitions,
  sample: number,
  logger: Pick<EngineLogger, 'warn'>,
  now: () => number,
): Promise<number> {
  let diverged = 0;
  let replayed = 0;
  try {
    for (const { name, version } of definitions.versions()) {
      const reports = await replayStoredInstances(
        storage,
        definitions,
        { workflow: name, version, limit: sample },
        now,
      );
      replayed += reports.length;
      for (const report of reports) {
        if (report.result === 'ok') continue;
        diverged++;
        logger.warn(
          `Instance "${report.id}" of ${name}@${version} would diverge on this code (${report.reason}` +
            `${report.entry === null ? '' : ` at "${report.entry}"`}): ${report.message}`,
        );
      }
    }
  } catch (error) {
    logger.warn(`The startup replay check could not finish: ${error instanceof Error ? error.message : String(error)}`);
    return diverged;
  }
  if (diverged > 0)
    logger.warn(
      `${diverged} of ${replayed} unfinished instances sampled would diverge on this code: see docs/deploying-changes.md.`,
    );
  return diverged;
}
