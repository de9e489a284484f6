import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { checkOptions } from '../options/known-keys.js';
import type { WorkflowListQuery } from '../storage/workflow-store.js';
import { toEpochOption } from './epoch-option.js';
import { KNOWN_STATUSES, parseListRequest, type WorkflowListOptions } from './list-request.js';

/**
 * Which instances a bulk action (`cancelMany()`, `terminateMany()`, `retryMany()`...) acts on: the
 * filters `list()` takes, plus `createdAfter` and `ids`. Every given filter must hold. A filter
 * that narrows nothing needs `all: true`, so an empty object never cancels a whole store by mistake.
 */
export interface WorkflowBulkFilter extends Omit<WorkflowListOptions, 'after' | 'order' | 'limit' | 'offset'> {
  /** Only instances created strictly after this time. */
  createdAfter?: Date | number;
  /** Only these instances (at most 100,000 ids; unknown ones are skipped). */
  ids?: string[];
  /** Required when no other filter narrows the match: act on every instance. */
  all?: boolean;
}

/** A bulk action's result: how many instances the filter matched, and how many of them the action changed. */
export interface WorkflowBulkResult {
  matched: number;
  changed: number;
}

/** The options of `cancelMany()`, `terminateMany()`, `pauseMany()` and `resumeMany()` (which takes no `reason`). */
export interface WorkflowBulkOptions {
  /** Stored with each instance it changes, as `cancel()`'s or `pause()`'s reason. */
  reason?: string;
  /**
   * The application's transaction (a `pg` client, a `mysql2` connection, an ORM's handle, as
   * `start()` takes it): every page's change runs in it, so they all commit or roll back with the
   * application's rows (a rollback leaves every instance as it was), and running executions hear
   * of them at the commit. The pages are still read outside it, so an instance it created itself is
   * not matched. Not on the in-memory store.
   */
  transaction?: unknown;
}

/** `method`'s options, checked (`resumeMany()` takes no reason). */
export function checkBulkOptions(method: string, options: WorkflowBulkOptions | undefined, reason: boolean): void {
  if (options === undefined) return;
  checkOptions(options, reason ? ['reason', 'transaction'] : ['transaction'], `options of ${method}()`);
  if (options.reason !== undefined && typeof options.reason !== 'string')
    throw invalidInput(`Invalid ${method}() option "reason": ${shownValue(options.reason)}. Use a string.`);
}

/** A bulk filter, checked: the store's query (without paging) and the ids to keep to, if any. */
export interface BulkSelection {
  query: Omit<WorkflowListQuery, 'limit' | 'offset' | 'after' | 'order'>;
  ids: string[] | null;
}

const MAX_IDS = 100_000;

/**
 * `method`'s filter, checked as `list()` checks its own, at `now`. Throws a marked `TypeError` naming
 * the bad option, or saying that a filter matching everything needs `all: true`.
 */
export function parseBulkFilter(
  method: string,
  filter: WorkflowBulkFilter | undefined,
  now: number,
  /** How the caller says `all: true` (the CLI: `--all`), for the message. */
  allOption = '{ all: true }',
): BulkSelection {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw invalidInput(
      `Invalid ${method}() filter: ${shownValue(filter)}. Pass an object such as { status: 'failed' }.`,
    );
  const { createdAfter, ids, all, ...listed } = filter;
  if (all !== undefined && typeof all !== 'boolean')
    throw invalidInput(`Invalid ${method}() option "all": ${shownValue(all)}. Use true, or leave it out.`);
  if (ids !== undefined) {
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || id === ''))
      throw invalidInput(`Invalid ${method}() option "ids": use an array of instance ids (non-empty strings).`);
    if (ids.length > MAX_IDS)
      throw invalidInput(
        `Invalid ${method}() option "ids": ${ids.length} ids; at most ${MAX_IDS}. Split the list, or use a filter.`,
      );
  }
  const { limit: _limit, offset: _offset, after: _after, order: _order, ...query } = parseListRequest(listed);
  if (createdAfter !== undefined) {
    toEpochOption(createdAfter, method, 'createdAfter');
    // Created times are whole milliseconds: strictly after t is from floor(t) + 1 on.
    const from = Math.floor(createdAfter instanceof Date ? createdAfter.getTime() : createdAfter) + 1;
    query.createdFrom = query.createdFrom === undefined ? from : Math.max(query.createdFrom, from);
  }
  const selection: BulkSelection = { query, ids: ids === undefined ? null : [...new Set(ids)] };
  if (all !== true && !narrows(selection, now)) {
    throw invalidInput(
      `${method}() was given a filter that matches every instance. ` +
        `Narrow it (status, workflow, ids, createdBefore...), or pass ${allOption} to act on every instance.`,
    );
  }
  return selection;
}

/** Whether the selection can leave some instance out (a bound in the future, or every status, leaves none). */
function narrows({ query, ids }: BulkSelection, now: number): boolean {
  if (ids !== null) return true;
  if (query.status !== undefined && KNOWN_STATUSES.some((s) => !query.status!.includes(s))) return true;
  if (query.createdBefore !== undefined && query.createdBefore <= now) return true;
  if (query.createdFrom !== undefined && query.createdFrom > 0) return true;
  return (
    query.workflow !== undefined ||
    query.version !== undefined ||
    query.parentId !== undefined ||
    query.scheduleId !== undefined ||
    query.idPrefix !== undefined
  );
}
