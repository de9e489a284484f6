import { parseBulkFilter, type WorkflowBulkFilter, type WorkflowBulkResult } from '../client/bulk-request.js';
import type { WorkflowClient } from '../client/workflow-client.js';
import { html, type SafeHtml } from './html.js';
import { notice, page } from './layout.js';
import { listUrl, parseListQuery, type ListFilters, type ListRequest } from './list-query.js';

/** The bulk actions the list page offers on its filter, and what each does to one instance. */
export const BULK_ACTIONS: Record<string, { label: string; does: string }> = {
  cancel: { label: 'Cancel', does: 'stops at its next step, runs its compensations and ends cancelled' },
  terminate: { label: 'Terminate', does: 'ends cancelled at once, without compensations' },
  retry: { label: 'Retry', does: 'runs again from where it stopped (failed, cancelled and compensation_failed ones)' },
  pause: { label: 'Pause', does: 'is claimed by no worker until resumed; a running execution stops at its next step' },
  resume: { label: 'Resume', does: 'carries on where it stopped (paused ones)' },
};

/** The confirmation page counts this many matching instances at most (ten list pages). */
export const BULK_COUNT_CAP = 10_000;

/** The list's filters as hidden fields, so a POST carries the very filter the page shows. */
function filterFields(f: ListFilters): SafeHtml[] {
  const fields = f.status.map((s) => html`<input type="hidden" name="status" value="${s}">`);
  for (const key of ['workflow', 'version', 'schedule', 'parent', 'id', 'from', 'to'] as const)
    if (f[key] !== '') fields.push(html`<input type="hidden" name="${key}" value="${f[key]}">`);
  return fields;
}

/** The list page's bulk panel: an action on every instance of the current filter, confirmed on the next page. */
export function bulkPanel(base: string, request: ListRequest): SafeHtml | '' {
  if (request.errors.length > 0) return '';
  return html`<form class="panel" method="post" action="${base}/actions/bulk" aria-label="Act on every match">
<p>Act on every instance this filter matches (not only this page). The next page shows how many match, and asks.</p>
${filterFields(request.filters)}
<div class="actions-row">
<div><label for="bulk-action">Action</label><select id="bulk-action" name="bulk">${Object.entries(BULK_ACTIONS).map(([value, { label }]) => html`<option value="${value}">${label}</option>`)}</select></div>
<div><label for="bulk-reason">Reason (cancel, terminate, pause)</label><input id="bulk-reason" name="reason"></div>
<button type="submit">Review…</button>
</div>
</form>`;
}

/** A bulk request read from a form: the action, the reason, the list filters, and the filter for the client. */
export interface BulkRequest {
  action: string;
  reason: string;
  list: ListRequest;
  filter: WorkflowBulkFilter;
}

/** Reads a bulk form; a `TypeError` names what is wrong (an unknown action, a bad filter). */
export function parseBulkForm(form: Record<string, unknown>): BulkRequest {
  const action = typeof form.bulk === 'string' ? form.bulk : '';
  if (!Object.hasOwn(BULK_ACTIONS, action))
    throw new TypeError(`Unknown bulk action "${action}": use one of ${Object.keys(BULK_ACTIONS).join(', ')}.`);
  const list = parseListQuery(form);
  if (list.errors.length > 0) throw new TypeError(list.errors.join(' '));
  const reason = typeof form.reason === 'string' ? form.reason.trim() : '';
  return { action, reason, list, filter: { ...list.options } };
}

/**
 * Whether `filter` leaves no instance out at `now`, so the action needs the `all` confirmation (the
 * client's own rule: it refuses such a filter without `all: true`). Throws the client's `TypeError`
 * for a filter that is wrong either way.
 */
export function matchesEverything(filter: WorkflowBulkFilter, now: number): boolean {
  try {
    parseBulkFilter('bulk', filter, now);
    return false;
  } catch {
    parseBulkFilter('bulk', { ...filter, all: true }, now);
    return true;
  }
}

/** How many instances `filter` matches now, counted up to `BULK_COUNT_CAP` (`capped` past it). */
export async function countMatching(
  client: WorkflowClient,
  filter: WorkflowBulkFilter,
): Promise<{ count: number; capped: boolean }> {
  let count = 0;
  let after: { createdAt: number; id: string } | undefined;
  for (;;) {
    const rows = await client.list({ ...filter, order: 'asc', limit: 1000, ...(after ? { after } : {}) });
    count += rows.length;
    if (count >= BULK_COUNT_CAP) return { count: BULK_COUNT_CAP, capped: true };
    if (rows.length < 1000) return { count, capped: false };
    const last = rows[rows.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

/** The page that asks before a bulk action: what it does, how many instances match, and the `all` confirmation when the filter matches everything. */
export function bulkConfirmationPage(
  base: string,
  readOnly: boolean,
  request: BulkRequest,
  matching: { count: number; capped: boolean },
  everything: boolean,
  error: string | null = null,
): SafeHtml {
  const { label, does } = BULK_ACTIONS[request.action]!;
  const count = matching.capped
    ? `${matching.count.toLocaleString('en')} or more`
    : matching.count.toLocaleString('en');
  const back = listUrl(base, request.list.filters);
  return page(
    { base, title: `${label} every match`, readOnly, current: 'instances' },
    html`<p><a href="${back}">← Instances</a></p>
<h1>${label} every instance that matches?</h1>
${error ? notice('error', error) : ''}
<form class="panel" method="post" action="${base}/actions/bulk" aria-label="Confirm ${label.toLowerCase()} every match">
<p id="bulk-count"><strong>${count}</strong> instance${matching.count === 1 && !matching.capped ? '' : 's'} match now. Each one it applies to ${does}; the others are left as they are. Instances created from now on are not included.</p>
${everything ? html`<p class="notice error" role="alert">This filter matches <strong>every instance</strong> in the store.</p><label for="bulk-all">Type <code>all</code> to act on every instance</label><input id="bulk-all" name="all" autocomplete="off" required>` : ''}
${filterFields(request.list.filters)}<input type="hidden" name="bulk" value="${request.action}"><input type="hidden" name="reason" value="${request.reason}"><input type="hidden" name="confirmed" value="yes">
<div class="actions-row"><button type="submit" class="${request.action === 'cancel' || request.action === 'terminate' ? 'danger' : ''}">${label} ${count}</button><a href="${back}">Leave them as they are</a></div>
</form>`,
  );
}

/** Runs the confirmed bulk action; resolves to the list page (its filter) with what it did. */
export async function runBulk(
  client: WorkflowClient,
  base: string,
  request: BulkRequest,
  all: boolean,
): Promise<string> {
  const filter: WorkflowBulkFilter = { ...request.filter, ...(all ? { all: true } : {}) };
  const reason = request.reason === '' ? {} : { reason: request.reason };
  let result: WorkflowBulkResult;
  switch (request.action) {
    case 'cancel':
      result = await client.cancelMany(filter, reason);
      break;
    case 'terminate':
      result = await client.terminateMany(filter, reason);
      break;
    case 'retry':
      result = await client.retryMany(filter);
      break;
    case 'pause':
      result = await client.pauseMany(filter, reason);
      break;
    default:
      result = await client.resumeMany(filter);
  }
  const url = listUrl(base, request.list.filters);
  const query = new URLSearchParams({
    done: `bulk-${request.action}`,
    matched: String(result.matched),
    changed: String(result.changed),
  });
  return `${url}${url.includes('?') ? '&' : '?'}${query.toString()}`;
}

/** The list page's message after a bulk action (`done=bulk-<action>&matched=&changed=`), from numbers only. */
export function bulkDoneMessage(query: Record<string, unknown> | undefined): string | null {
  const done = typeof query?.done === 'string' ? query.done : '';
  if (!done.startsWith('bulk-') || !Object.hasOwn(BULK_ACTIONS, done.slice(5))) return null;
  const number = (value: unknown) => (typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : null);
  const matched = number(query?.matched);
  const changed = number(query?.changed);
  if (matched === null || changed === null) return null;
  return `${BULK_ACTIONS[done.slice(5)]!.label}: ${changed} of the ${matched} matching instances changed (the others were already so, or it does not apply to them).`;
}
