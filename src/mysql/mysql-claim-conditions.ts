import { mysqlUnpaused } from './mysql-pauses.js';
import { placeholders, type MySqlTables } from './mysql-tables.js';
import { UNFINISHED } from '../sql/status-lists.js';
import type { ClaimExclusions } from '../sql/limited-claim.js';
import type { WorkflowClaimRequest } from '../storage/workflow-store.js';

/** The plain claim order, as `instances_due` holds it. */
export const CLAIM_ORDER = 'claim_priority, wake_at, created_at, id';

/** A statement and its parameters. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** `n` copies of `text`, comma-separated. */
export function repeated(text: string, n: number): string {
  return Array.from({ length: n }, () => text).join(', ');
}

/**
 * Due for the claim (the conditions of `instances_due` and of the claim's workflow versions, not
 * paused, nor of a paused workflow), minus what `exclusions` names, as conditions on a row of the
 * instances table, with their parameters. `priorities` (at least one: those `dueGroups()` found)
 * bound the walk of `instances_due`: under `claim_priority IS NOT NULL` (a range on the index's first
 * column) `wake_at <= now` bounds nothing, and with fewer due than the claim's limit the walk read
 * every sleeping (and leased) instance after the due ones; with the first column fixed (one range per
 * priority, walked in index order) `wake_at <= now` ends each range at its last due instance.
 */
export function dueWhere(
  tables: MySqlTables,
  request: WorkflowClaimRequest,
  exclusions: ClaimExclusions | null,
  priorities: readonly number[],
): Statement {
  const params: unknown[] = [request.now, request.now];
  // Written into the text (integers the database gave): as placeholders, a prepared statement's
  // cursor (the one-statement claim's) walked the whole index instead of one range per priority.
  const bound = priorities.map((priority) => String(Math.trunc(Number(priority)))).join(', ');
  const pairs = request.workflows.map(({ name, version }) => {
    params.push(name, version);
    return '(?, ?)';
  });
  let extra = '';
  if (exclusions) {
    const excluded: string[] = [];
    const notIn = (column: string, values: readonly string[]) => {
      if (values.length === 0) return;
      excluded.push(`${column} NOT IN (${placeholders(values.length)})`);
      params.push(...values);
    };
    const pairsNotIn = (column: string, values: ReadonlyArray<[string, string]>) => {
      if (values.length === 0) return;
      // A NULL key is in no pair: without the IS NULL, NOT IN would be unknown and drop the row.
      excluded.push(`(${column} IS NULL OR (workflow, ${column}) NOT IN (${repeated('(?, ?)', values.length)}))`);
      params.push(...values.flat());
    };
    notIn('workflow', exclusions.fullWorkflows);
    pairsNotIn('concurrency_key', exclusions.fullKeys);
    notIn('workflow', exclusions.fullOwnWindows);
    pairsNotIn('rate_limit_key', exclusions.fullKeyWindows);
    // An instance to terminate needs no room (see `ClaimCandidate`): no exclusion passes it over.
    if (excluded.length > 0) extra = `\n  AND (terminate_requested = 1 OR (${excluded.join('\n    AND ')}))`;
  }
  return {
    sql: `claim_priority IN (${bound}) AND wake_at <= ? AND (lease_token IS NULL OR lease_until < ?) AND status IN ${UNFINISHED}
  AND (workflow, version) IN (${pairs.join(', ')}) AND ${mysqlUnpaused(tables)}${extra}`,
    params,
  };
}
