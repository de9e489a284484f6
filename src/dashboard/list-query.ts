import type { WorkflowListOptions } from '../client/list-request.js';
import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  UNFINISHED_STATUSES,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';

/** Every status, in the order the filter shows them. */
export const ALL_STATUSES: readonly WorkflowStatus[] = [...UNFINISHED_STATUSES, PAUSED_STATUS, ...FINISHED_STATUSES];

/** The list page's filters, as the query string carries them (`status` may repeat). */
export interface ListFilters {
  status: WorkflowStatus[];
  workflow: string;
  version: string;
  schedule: string;
  parent: string;
  id: string;
  /** `YYYY-MM-DDTHH:mm[:ss]` in UTC, as a datetime-local input sends it, or any ISO time. */
  from: string;
  to: string;
}

/** A place in the list's order (an instance's `createdAt` and `id`), carried as `<createdAt>.<id>`. */
export interface ListPosition {
  createdAt: number;
  id: string;
}

/** What the list page asks the client for: the filters as list() options, and where the page starts. */
export interface ListRequest {
  filters: ListFilters;
  options: Omit<WorkflowListOptions, 'limit' | 'offset' | 'order' | 'after'>;
  /** Older than this (the "older" link). */
  after: ListPosition | null;
  /** Newer than this (the "newer" link). */
  before: ListPosition | null;
  /** What was wrong with the query string; the page shows these and lists nothing. */
  errors: string[];
}

const FILTER_KEYS = ['workflow', 'version', 'schedule', 'parent', 'id', 'from', 'to'] as const;

function single(value: unknown): string {
  if (Array.isArray(value)) return single(value[0]);
  return typeof value === 'string' ? value.trim() : '';
}

function many(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(many);
  return typeof value === 'string' && value !== '' ? [value] : [];
}

/** A datetime-local value (no zone: read as UTC) or an ISO time, as epoch ms; `null` when it is neither. */
export function parseUtcTime(text: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:\d{2})?$/.test(text)) return null;
  const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : `${text.includes('T') ? text : `${text}T00:00`}Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms : null;
}

/** `<createdAt>.<id>` back to a position; `null` when it isn't one. */
export function parsePosition(text: string): ListPosition | null {
  const dot = text.indexOf('.');
  if (dot < 1) return null;
  const createdAt = Number(text.slice(0, dot));
  const id = text.slice(dot + 1);
  if (!Number.isSafeInteger(createdAt) || !/^-?\d+$/.test(text.slice(0, dot)) || id === '') return null;
  return { createdAt, id };
}

export function formatPosition(position: ListPosition): string {
  return `${position.createdAt}.${position.id}`;
}

/** Reads the list page's query string. Never throws: what is wrong goes into `errors`. */
export function parseListQuery(query: Record<string, unknown> | undefined): ListRequest {
  const q = query ?? {};
  const errors: string[] = [];
  const filters = Object.fromEntries(FILTER_KEYS.map((key) => [key, single(q[key])])) as Omit<ListFilters, 'status'>;
  const status: WorkflowStatus[] = [];
  for (const value of many(q.status)) {
    if ((ALL_STATUSES as readonly string[]).includes(value)) {
      if (!status.includes(value as WorkflowStatus)) status.push(value as WorkflowStatus);
    } else {
      errors.push(`Unknown status "${value}": use one of ${ALL_STATUSES.join(', ')}.`);
    }
  }
  const options: ListRequest['options'] = {};
  if (status.length > 0) options.status = status;
  if (filters.workflow) options.workflow = filters.workflow;
  if (filters.version) {
    const version = Number(filters.version);
    if (/^\d+$/.test(filters.version) && Number.isSafeInteger(version) && version >= 1) options.version = version;
    else errors.push(`Version "${filters.version}" is not a version: use a whole number, 1 or more.`);
  }
  if (filters.schedule) options.scheduleId = filters.schedule;
  if (filters.parent) options.parentId = filters.parent;
  if (filters.id) options.idPrefix = filters.id;
  for (const [key, option] of [
    ['from', 'createdFrom'],
    ['to', 'createdBefore'],
  ] as const) {
    if (!filters[key]) continue;
    const ms = parseUtcTime(filters[key]);
    if (ms === null) errors.push(`"${filters[key]}" is not a time: use YYYY-MM-DDTHH:mm (UTC) or an ISO time.`);
    else options[option] = ms;
  }
  let after: ListPosition | null = null;
  let before: ListPosition | null = null;
  const afterText = single(q.after);
  const beforeText = single(q.before);
  if (afterText) {
    after = parsePosition(afterText);
    if (!after)
      errors.push('The page position ("after") is not one this dashboard made: start again from the first page.');
  } else if (beforeText) {
    before = parsePosition(beforeText);
    if (!before)
      errors.push('The page position ("before") is not one this dashboard made: start again from the first page.');
  }
  return { filters: { ...filters, status }, options, after, before, errors };
}

/** The list page's URL for these filters, starting at a position (or at the newest). */
export function listUrl(
  base: string,
  filters: ListFilters,
  position: { after?: ListPosition; before?: ListPosition } = {},
): string {
  const params = new URLSearchParams();
  for (const s of filters.status) params.append('status', s);
  for (const key of FILTER_KEYS) if (filters[key]) params.set(key, filters[key]);
  if (position.after) params.set('after', formatPosition(position.after));
  else if (position.before) params.set('before', formatPosition(position.before));
  const text = params.toString();
  return text ? `${listPath(base)}?${text}` : listPath(base);
}

/**
 * The list page's path: `base`, or `/` when the dashboard is mounted at the root (its `base` is
 * then empty, and an empty link or redirect would lead to the current page instead).
 */
export function listPath(base: string): string {
  return base === '' ? '/' : base;
}

/** The instance page's URL. */
export function instanceUrl(base: string, id: string): string {
  return `${base}/instance?${new URLSearchParams({ id }).toString()}`;
}

/** The filters of a list with no filter. */
export function noFilters(): ListFilters {
  return { status: [], workflow: '', version: '', schedule: '', parent: '', id: '', from: '', to: '' };
}
