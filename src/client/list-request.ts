import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  UNFINISHED_STATUSES,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';
import type { WorkflowListQuery } from '../storage/workflow-store.js';
import { toEpochOption } from './epoch-option.js';

export interface WorkflowListOptions {
  status?: WorkflowStatus | WorkflowStatus[];
  workflow?: string;
  version?: number;
  parentId?: string;
  scheduleId?: string;
  /** Only ids that start with this (compared literally). */
  idPrefix?: string;
  /** Only instances created at or after this time. */
  createdFrom?: Date | number;
  /** Only instances created before this time. */
  createdBefore?: Date | number;
  /**
   * Keyset paging: start right after this instance in the order (pass the last one of the previous
   * page, or just its `createdAt` and `id`). Deep pages cost what the first does, unlike `offset`.
   */
  after?: { createdAt: number; id: string };
  /** `'asc'` (default): oldest first. `'desc'`: newest first. */
  order?: 'asc' | 'desc';
  /** Default 100, at most 1000. */
  limit?: number;
  /** Default 0. */
  offset?: number;
}

/** Every status an instance may have. */
export const KNOWN_STATUSES: readonly WorkflowStatus[] = [...UNFINISHED_STATUSES, PAUSED_STATUS, ...FINISHED_STATUSES];

/** `list()`'s options, checked, as the store's query. Throws a `TypeError` naming the bad option. */
export function parseListRequest(options: WorkflowListOptions): WorkflowListQuery {
  const limit = options.limit ?? 100;
  const offset = options.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw invalidInput(`Invalid list() option "limit": ${shownValue(limit)}. Use a whole number from 1 to 1000.`);
  if (!Number.isInteger(offset) || offset < 0)
    throw invalidInput(`Invalid list() option "offset": ${shownValue(offset)}. Use a whole number, 0 or more.`);
  const status =
    options.status === undefined ? undefined : Array.isArray(options.status) ? options.status : [options.status];
  for (const s of status ?? [])
    if (!KNOWN_STATUSES.includes(s))
      throw invalidInput(
        `Invalid list() option "status": ${JSON.stringify(s)}. Use one of ${KNOWN_STATUSES.join(', ')}.`,
      );
  if (status && status.length === 0)
    throw invalidInput('Invalid list() option "status": the list is empty. Leave it out for every status.');
  if (options.idPrefix !== undefined && (typeof options.idPrefix !== 'string' || options.idPrefix === '')) {
    throw invalidInput(
      `Invalid list() option "idPrefix": ${JSON.stringify(options.idPrefix)}. Use a non-empty string, or leave it out.`,
    );
  }
  if (options.order !== undefined && options.order !== 'asc' && options.order !== 'desc') {
    throw invalidInput(`Invalid list() option "order": ${JSON.stringify(options.order)}. Use 'asc' or 'desc'.`);
  }
  const after = options.after;
  if (after !== undefined && (after === null || typeof after.id !== 'string' || !Number.isFinite(after.createdAt))) {
    throw invalidInput(
      'Invalid list() option "after": pass an instance of the previous page, or { createdAt: epoch ms, id: string }.',
    );
  }
  return {
    ...options,
    status,
    createdFrom:
      options.createdFrom === undefined ? undefined : toEpochOption(options.createdFrom, 'list', 'createdFrom'),
    createdBefore:
      options.createdBefore === undefined ? undefined : toEpochOption(options.createdBefore, 'list', 'createdBefore'),
    after: after === undefined ? undefined : { createdAt: after.createdAt, id: after.id },
    limit,
    offset,
  };
}
