import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { FINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowPurgeResult } from '../storage/workflow-store.js';
import { parseDuration, type Duration } from '../time/duration.js';
import { KNOWN_STATUSES } from './list-request.js';

/** What `WorkflowClient.purge()` takes. */
export interface PurgeOptions {
  olderThan: Duration | Date;
  statuses?: WorkflowStatus[];
  limit?: number;
}

/** A purge to run: the finished statuses to delete, the cutoff, and `limit` (one batch) or none (until nothing is left). */
export interface PurgeRequest {
  statuses: WorkflowStatus[];
  before: number;
  limit: number | undefined;
}

const PURGE_BATCH = 1000;

/**
 * `purge()`'s options at `now`, checked; `null` when they name no finished status (nothing to
 * delete). Throws a `TypeError` naming the bad option.
 */
export function parsePurgeRequest(options: PurgeOptions, now: number): PurgeRequest | null {
  const cutoff =
    options.olderThan instanceof Date
      ? options.olderThan.getTime()
      : now - parseDuration(options.olderThan, 'purge() option "olderThan"');
  if (!Number.isFinite(cutoff))
    throw invalidInput('Invalid purge() option "olderThan": use a valid Date or a duration such as \'30d\'.');
  // Nothing ended after now, but an open rate window ends later: a cutoff past now would delete it.
  const before = Math.min(cutoff, now + 1);
  if (options.statuses !== undefined && !Array.isArray(options.statuses)) {
    throw invalidInput(
      `Invalid purge() option "statuses": ${JSON.stringify(options.statuses)}. Use an array of statuses, or leave it out for every finished one.`,
    );
  }
  // A misspelt status would otherwise purge nothing, silently (unfinished ones are only skipped).
  for (const s of options.statuses ?? [])
    if (!KNOWN_STATUSES.includes(s))
      throw invalidInput(
        `Invalid purge() option "statuses": ${JSON.stringify(s)}. Use ${FINISHED_STATUSES.join(', ')}.`,
      );
  const statuses = (options.statuses ?? [...FINISHED_STATUSES]).filter((s) => FINISHED_STATUSES.includes(s));
  if (statuses.length === 0) return null;
  if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) {
    throw invalidInput(`Invalid purge() option "limit": ${shownValue(options.limit)}. Use a whole number, 1 or more.`);
  }
  return { statuses, before, limit: options.limit };
}

/** Runs `request`: one batch of `limit`, or batches until one finds nothing. */
export async function purgeInBatches(
  storage: Pick<WorkflowStorage, 'purge'>,
  request: PurgeRequest | null,
): Promise<WorkflowPurgeResult> {
  const total: WorkflowPurgeResult = { instances: 0, signals: 0, rateLimits: 0, debounceKeys: 0 };
  if (request === null) return total;
  const { statuses, before, limit } = request;
  for (;;) {
    const done = await storage.purge({ statuses, before, limit: limit ?? PURGE_BATCH });
    total.instances += done.instances;
    total.signals += done.signals;
    total.rateLimits += done.rateLimits;
    total.debounceKeys += done.debounceKeys;
    // Until a batch finds nothing: one that skipped rows another transaction holds (PostgreSQL's
    // SKIP LOCKED) deletes fewer than it asked for while more remain.
    if (limit !== undefined || done.instances + done.signals + done.rateLimits + done.debounceKeys === 0) return total;
  }
}
