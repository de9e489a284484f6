import { FINISHED_STATUSES, UNFINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';

/** `('a', 'b')`: statuses as a SQL list of literals, for `status IN ...` (they are the store's own constants). */
function sqlList(statuses: readonly WorkflowStatus[]): string {
  return `(${statuses.map((status) => `'${status}'`).join(', ')})`;
}

/**
 * `UNFINISHED_STATUSES` as a SQL list. PostgreSQL's partial indexes repeat it literally (migration
 * 0001), and a claim must write it the same way for the planner to match them: same order, same text.
 */
export const UNFINISHED = sqlList(UNFINISHED_STATUSES);

/** `FINISHED_STATUSES` as a SQL list (PostgreSQL's `instances_finished` index repeats it). */
export const FINISHED = sqlList(FINISHED_STATUSES);

/** The statuses a cancel (not a terminate) applies to: a compensating instance is undoing already. */
export const CANCELLABLE = sqlList(UNFINISHED_STATUSES.filter((status) => status !== 'compensating'));

const FINISHED_SET = new Set<WorkflowStatus>(FINISHED_STATUSES);

/** The finished statuses among `statuses`: unfinished instances are never purged, whatever a purge asks. */
export function finishedOnly(statuses: readonly WorkflowStatus[]): WorkflowStatus[] {
  return statuses.filter((status) => FINISHED_SET.has(status));
}
