import type { EngineLogger } from '../engine/workflow-engine.js';
import { UNFINISHED_STATUSES } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowUndeclaredDue } from '../storage/workflow-store.js';

/** How often, at most, an idle worker looks for instances of versions it doesn't declare (by the module's clock). */
export const UNDECLARED_CHECK_INTERVAL = 60_000;
/** While they are still found, a version's instances are reported again after this long. */
export const UNDECLARED_REPEAT = 60 * 60_000;
/** The most instances one look counts (then reported as "at least"). */
const CAP = 1_000;
/** The unfinished statuses as the warning's `client.list()` call writes them. */
const UNFINISHED = `[${UNFINISHED_STATUSES.map((status) => `'${status}'`).join(', ')}]`;

export interface UndeclaredVersionsOptions {
  storage: WorkflowStorage;
  /** The workflow versions this process declares (and claims). */
  declared(): Array<{ name: string; version: number }>;
  logger: EngineLogger;
  /** How long an instance must have been due before it is reported (ms): some lease durations and polls. */
  grace: number;
}

/**
 * Tells the operator about instances no process claims because none declares their version (a
 * version removed in a deploy, a workflow deleted, a rollback to a release without it): they never
 * fail, so nothing else would. The worker calls `idle()` when a claim of everything found nothing;
 * at most once per `UNDECLARED_CHECK_INTERVAL` it then counts, in one read
 * (`WorkflowStore.countUndeclaredDue`), the instances of other versions due for longer than `grace`
 * (so a process that declares them would have claimed them by then), and logs one warning per
 * version, again after `UNDECLARED_REPEAT` while they are still there. A busy worker never looks;
 * a store without the method reports nothing.
 */
export class UndeclaredVersions {
  private nextCheck = -Infinity;
  /** When each version (`JSON.stringify([workflow, version])`) was last reported. */
  private readonly reported = new Map<string, number>();
  private lastFound: WorkflowUndeclaredDue[] = [];

  /** What the last look found (copies): `[]` before the first, or when it found nothing. */
  get found(): WorkflowUndeclaredDue[] {
    return this.lastFound.map((due) => ({ ...due }));
  }

  constructor(private readonly options: UndeclaredVersionsOptions) {}

  /** A claim of everything found nothing at `now`. Never rejects: a failed look is tried again at the next interval. */
  async idle(now: number): Promise<void> {
    if (now < this.nextCheck) return;
    this.nextCheck = now + UNDECLARED_CHECK_INTERVAL;
    const { storage, grace } = this.options;
    let found: WorkflowUndeclaredDue[] | null;
    try {
      found = await storage.countUndeclaredDue({
        dueBefore: now - grace,
        workflows: this.options.declared(),
        cap: CAP,
      });
    } catch {
      // The claims report an unreachable store (once per outage); this look has nothing to add.
      return;
    }
    if (found === null) return;
    this.lastFound = found;
    const capped = found.reduce((sum, { count }) => sum + count, 0) >= CAP;
    const seen = new Set<string>();
    for (const due of found) {
      const key = JSON.stringify([due.workflow, due.version]);
      seen.add(key);
      const last = this.reported.get(key);
      if (last !== undefined && now - last < UNDECLARED_REPEAT) continue;
      this.reported.set(key, now);
      this.options.logger.warn(message(due, capped, grace));
    }
    // A version no longer found is reported at once if its instances come back.
    for (const key of [...this.reported.keys()]) if (!seen.has(key)) this.reported.delete(key);
  }
}

function message({ workflow, version, count }: WorkflowUndeclaredDue, capped: boolean, grace: number): string {
  const name = JSON.stringify(workflow);
  return (
    `${capped ? 'At least ' : ''}${count} instance${count === 1 ? '' : 's'} of workflow ${name} version ${version} ` +
    `${count === 1 ? 'has' : 'have'} been due for over ${Math.round(grace / 1000)} s and no process claimed ${count === 1 ? 'it' : 'them'}; ` +
    `this process does not declare that version. If no running process declares it (a version removed in a deploy, a workflow ` +
    `deleted from the code, a rollback to a release without it), ${count === 1 ? 'it waits' : 'they wait'} forever: deploy a ` +
    `process that declares workflow ${name} version ${version} (terminate them first if they should not run: it then only ends ` +
    `them). client.list({ workflow: ${name}, version: ${version}, status: ${UNFINISHED} }) finds them.`
  );
}
