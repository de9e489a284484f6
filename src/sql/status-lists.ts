import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  UNFINISHED_STATUSES,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';

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

/** An unfinished instance an operator paused: what reads show as `paused` (the flag beside its stored status). */
export const SHOWN_PAUSED = `(paused AND status IN ${UNFINISHED})`;

/**
 * `list()`'s status filter as reads show statuses: `paused` is the paused flag on an unfinished
 * instance, and every other status is the stored one on an instance that does not show `paused`.
 * `list` writes the parameters of a status list (`?, ?` or `$3, $4`).
 */
export function shownStatusCondition(
  statuses: readonly WorkflowStatus[],
  list: (values: WorkflowStatus[]) => string,
): string {
  const stored = statuses.filter((status) => status !== PAUSED_STATUS);
  const parts: string[] = [];
  if (stored.length > 0) parts.push(`(status IN (${list(stored)}) AND NOT ${SHOWN_PAUSED})`);
  if (stored.length < statuses.length) parts.push(SHOWN_PAUSED);
  return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
}
