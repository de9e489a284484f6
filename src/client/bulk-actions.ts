import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { BULK_CHANGE_LIMIT } from '../storage/workflow-store-bulk.js';
import type { WorkflowListQuery } from '../storage/workflow-store.js';
import type { BulkSelection, WorkflowBulkResult } from './bulk-request.js';

/** How many instances a bulk action reads per page (`list()`'s most). */
export const BULK_PAGE = 1000;

/** How many instances of a page `oneAtATime()` acts on at once: each is its own short request. */
export const BULK_CONCURRENCY = 8;

/** What a bulk action reads through: the storage layer's `list()` and `get()`, and the clock. */
export interface BulkReads {
  list(query: WorkflowListQuery): Promise<WorkflowInstance[]>;
  get(id: string): Promise<WorkflowInstance | null>;
  now(): number;
}

/**
 * Acts on each instance `selection` matches, page by page in `list()`'s order (keyset paging on
 * `createdAt`, `id`: an instance whose status changes under the action keeps its place, so none is
 * skipped or met twice), never inside one long transaction: `act` gets one page and resolves to how
 * many of its instances it changed (see `oneAtATime()` and `inStorePages()`). Instances created
 * after the call began are left out (the pages end at its start), so it ends however fast new ones
 * come. An instance already in the wanted state changes nothing, so a run stopped halfway (a
 * crash) can simply be run again. With `ids`, each id is read and kept when it matches the other
 * filters.
 */
export async function actOnMatching(
  reads: BulkReads,
  selection: BulkSelection,
  act: (page: WorkflowInstance[]) => Promise<number>,
): Promise<WorkflowBulkResult> {
  const result: WorkflowBulkResult = { matched: 0, changed: 0 };
  const actOnPage = async (page: WorkflowInstance[]): Promise<void> => {
    result.matched += page.length;
    if (page.length > 0) result.changed += await act(page);
  };
  if (selection.ids !== null) {
    for (let i = 0; i < selection.ids.length; i += BULK_PAGE) {
      const found: Array<WorkflowInstance | null> = [];
      await eachAtMost(BULK_CONCURRENCY, selection.ids.slice(i, i + BULK_PAGE), async (id) => {
        found.push(await reads.get(id));
      });
      await actOnPage(found.filter((instance): instance is WorkflowInstance => matches(selection.query, instance)));
    }
    return result;
  }
  // +1: created at the same millisecond as the call counts as before it.
  const end = reads.now() + 1;
  const query: WorkflowListQuery = {
    ...selection.query,
    createdBefore: Math.min(selection.query.createdBefore ?? end, end),
    order: 'asc',
    limit: BULK_PAGE,
    offset: 0,
  };
  for (;;) {
    const page = await reads.list(query);
    await actOnPage(page);
    if (page.length < BULK_PAGE) return result;
    const last = page[page.length - 1]!;
    query.after = { createdAt: last.createdAt, id: last.id };
  }
}

/** A page act that calls `act` on each instance (`BULK_CONCURRENCY` at a time, each its own request): for a retry, which has no page form. */
export function oneAtATime(
  act: (instance: WorkflowInstance) => Promise<boolean>,
): (page: WorkflowInstance[]) => Promise<number> {
  return async (page) => {
    let changed = 0;
    await eachAtMost(BULK_CONCURRENCY, page, async (instance) => {
      if (await act(instance)) changed++;
    });
    return changed;
  };
}

/**
 * A page act that hands the store the ids of the instances `applies` to (as listed: the store
 * checks again under its row locks), `BULK_CHANGE_LIMIT` at a time, each slice one transaction of
 * `change` (`WorkflowStorage.changeMany()`), one after the other.
 */
export function inStorePages(
  applies: (instance: WorkflowInstance) => boolean,
  change: (ids: string[]) => Promise<string[]>,
): (page: WorkflowInstance[]) => Promise<number> {
  return async (page) => {
    const ids = page.filter(applies).map((instance) => instance.id);
    let changed = 0;
    for (let i = 0; i < ids.length; i += BULK_CHANGE_LIMIT)
      changed += (await change(ids.slice(i, i + BULK_CHANGE_LIMIT))).length;
    return changed;
  };
}

/** Whether `instance` passes every filter of `query` (the store's `list()` rules, for instances read by id). */
function matches(query: BulkSelection['query'], instance: WorkflowInstance | null): boolean {
  if (instance === null) return false;
  if (query.status !== undefined && !query.status.includes(instance.status)) return false;
  if (query.workflow !== undefined && instance.workflow !== query.workflow) return false;
  if (query.version !== undefined && instance.version !== query.version) return false;
  if (query.parentId !== undefined && instance.parentId !== query.parentId) return false;
  if (query.scheduleId !== undefined && instance.scheduleId !== query.scheduleId) return false;
  if (query.idPrefix !== undefined && !instance.id.startsWith(query.idPrefix)) return false;
  if (query.createdFrom !== undefined && instance.createdAt < query.createdFrom) return false;
  if (query.createdBefore !== undefined && instance.createdAt >= query.createdBefore) return false;
  return true;
}

/** Calls `fn` on every item, at most `limit` at a time; rejects with the first failure once all settled. */
async function eachAtMost<T>(limit: number, items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async (): Promise<void> => {
    while (next < items.length && failure === null) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
}
