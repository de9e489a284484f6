import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { formatTime } from './format.js';
import { html, type SafeHtml } from './html.js';
import { notice, page, statusBadge } from './layout.js';
import { ALL_STATUSES, instanceUrl, listPath, listUrl, type ListRequest } from './list-query.js';

export interface ListPageData {
  base: string;
  readOnly: boolean;
  request: ListRequest;
  /** The page's instances, newest first (empty when the query had errors). */
  instances: WorkflowInstance[];
  hasOlder: boolean;
  hasNewer: boolean;
  /** Registered workflow names, offered as suggestions. */
  workflows: string[];
  message?: { kind: 'ok' | 'error'; text: string } | null;
  /** Filtered by one workflow: the form that pauses (or resumes) it. */
  workflowPause?: SafeHtml | null;
  /** The bulk actions on the filter (`bulk-panel.ts`); absent on a read-only dashboard. */
  bulk?: SafeHtml | '' | null;
}

/** The instances page: the filters, one page of instances newest first, and keyset links. */
export function renderListPage(data: ListPageData): SafeHtml {
  const { base, request } = data;
  const f = request.filters;
  const filtered =
    f.status.length > 0 || [f.workflow, f.version, f.schedule, f.parent, f.id, f.from, f.to].some((v) => v !== '');
  const first = data.instances[0];
  const last = data.instances.at(-1);
  // The live stream follows the list's first page with these filters, as the store shows it.
  const filterQuery = listUrl(base, f).split('?')[1];
  const live =
    request.after === null && request.before === null
      ? `${base}/events?list=1${filterQuery ? `&${filterQuery}` : ''}`
      : null;
  const body = html`
<h1>Instances</h1>
${data.message ? notice(data.message.kind, data.message.text) : ''}
<form class="filters panel" method="get" action="${listPath(base)}" role="search" aria-label="Filter instances">
  <fieldset>
    <legend>Status</legend>
    ${ALL_STATUSES.map(
      (s) =>
        html`<label><input type="checkbox" name="status" value="${s}"${f.status.includes(s) ? html` checked` : ''}> ${s.replace('_', ' ')}</label>`,
    )}
  </fieldset>
  <div><label for="f-workflow">Workflow</label><input id="f-workflow" name="workflow" value="${f.workflow}" list="workflow-names" autocomplete="off"></div>
  <datalist id="workflow-names">${data.workflows.map((w) => html`<option value="${w}"></option>`)}</datalist>
  <div><label for="f-version">Version</label><input id="f-version" name="version" value="${f.version}" inputmode="numeric"></div>
  <div><label for="f-schedule">Schedule id</label><input id="f-schedule" name="schedule" value="${f.schedule}"></div>
  <div><label for="f-parent">Parent id</label><input id="f-parent" name="parent" value="${f.parent}"></div>
  <div><label for="f-id">Id starts with</label><input id="f-id" name="id" value="${f.id}"></div>
  <div><label for="f-from">Created from (UTC)</label><input id="f-from" name="from" type="datetime-local" step="1" value="${f.from}"></div>
  <div><label for="f-to">Created before (UTC)</label><input id="f-to" name="to" type="datetime-local" step="1" value="${f.to}"></div>
  <div class="actions-row"><button type="submit">Filter</button>${filtered ? html`<a href="${listPath(base)}">Clear</a>` : ''}</div>
</form>
${request.errors.map((e) => notice('error', e))}
${data.workflowPause ?? ''}
${data.bulk ?? ''}
<p id="live-status" class="live-status" aria-live="polite">${live ? '' : 'Showing an older page: live updates are on for the newest page.'}</p>
<div ${live ? html`data-live="${live}" data-state="list"` : ''} id="instances">
${renderTable(base, data.instances)}
</div>
<nav class="pager" aria-label="Pages">
  ${data.hasNewer && first ? html`<a href="${listUrl(base, f)}">Newest</a> <a href="${listUrl(base, f, { before: first })}" rel="prev">← Newer</a>` : ''}
  ${data.hasOlder && last ? html`<a href="${listUrl(base, f, { after: last })}" rel="next">Older →</a>` : ''}
</nav>`;
  return page({ base, title: 'Instances', readOnly: data.readOnly, current: 'instances' }, body);
}

function renderTable(base: string, instances: WorkflowInstance[]): SafeHtml {
  if (instances.length === 0) return html`<p class="panel">No instances match.</p>`;
  return html`<table>
<caption>Newest first</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Workflow</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Updated</th><th scope="col">Runs</th><th scope="col">Parent / schedule</th></tr></thead>
<tbody>
${instances.map(
  (i) => html`<tr>
<td class="id"><a href="${instanceUrl(base, i.id)}">${i.id}</a></td>
<td>${i.workflow} <span class="muted">v${i.version}</span></td>
<td>${statusBadge(i.status)}</td>
<td>${formatTime(i.createdAt)}</td>
<td>${formatTime(i.updatedAt)}</td>
<td>${i.runs}</td>
<td class="id">${i.parentId ? html`<a href="${instanceUrl(base, i.parentId)}">${i.parentId}</a>` : ''}${i.scheduleId ? html`<span class="muted">${i.scheduleId}</span>` : ''}</td>
</tr>`,
)}
</tbody>
</table>`;
}
