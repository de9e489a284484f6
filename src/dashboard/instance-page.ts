import type { WorkflowInstanceDetails } from '../storage/workflow-store.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import { formatJson, formatTime, previewJson } from './format.js';
import { html, type SafeHtml } from './html.js';
import { notice, page, statusBadge } from './layout.js';
import { instanceUrl, listPath, listUrl, noFilters } from './list-query.js';
import { renderTimeline } from './timeline.js';
import { instancePauseForm } from './pause-actions.js';

export interface InstancePageData {
  base: string;
  readOnly: boolean;
  instance: WorkflowInstanceDetails;
  /** The first children, oldest first, and whether there are more. */
  children: WorkflowInstance[];
  moreChildren: boolean;
  message?: { kind: 'ok' | 'error'; text: string } | null;
}

const CANCELLABLE = new Set(['pending', 'running', 'suspended', 'paused']);
const RETRYABLE = new Set(['failed', 'cancelled', 'compensation_failed']);

/** An instance: its facts, payloads, timeline and children (the live region), then the actions. */
export function renderInstancePage(data: InstancePageData): SafeHtml {
  const { base, instance: i } = data;
  const finished = FINISHED_STATUSES.includes(i.status);
  const body = html`
<p><a href="${listPath(base)}">← Instances</a></p>
<h1><span class="muted">Instance</span> ${i.id}</h1>
${data.message ? notice(data.message.kind, data.message.text) : ''}
<p id="live-status" class="live-status" aria-live="polite"></p>
<div data-live="${base}/events?${new URLSearchParams({ id: i.id }).toString()}" data-state="${finished ? 'finished' : 'unfinished'}" id="instance">
${renderLive(data)}
</div>
${data.readOnly ? html`<p class="muted">Read-only dashboard: actions are turned off.</p>` : html`<div data-live-forms>${renderActions(data)}</div>`}`;
  return page({ base, title: i.id, readOnly: data.readOnly, current: 'instance' }, body);
}

function renderLive(data: InstancePageData): SafeHtml {
  const { base, instance: i } = data;
  return html`
<section class="panel" aria-labelledby="facts-title">
<h2 id="facts-title">Summary</h2>
<dl class="facts">
  <dt>Status</dt><dd id="instance-status">${statusBadge(i.status)}${i.cancelRequested && !finished(i) ? html` <span class="muted">(${i.terminateRequested ? 'terminate' : 'cancel'} requested${i.cancelReason ? `: ${i.cancelReason}` : ''})</span>` : ''}</dd>
  <dt>Workflow</dt><dd><a href="${listUrl(base, { ...noFilters(), workflow: i.workflow })}">${i.workflow}</a> version ${i.version}</dd>
  <dt>Created</dt><dd>${formatTime(i.createdAt)}</dd>
  <dt>Updated</dt><dd>${formatTime(i.updatedAt)}</dd>
  <dt>Next due</dt><dd>${finished(i) ? '—' : i.wakeAt === null ? 'when a signal or a cancel wakes it' : formatTime(i.wakeAt)}</dd>
  <dt>Runs</dt><dd>${i.runs}</dd>
  ${i.deadline !== null ? html`<dt>Deadline</dt><dd>${formatTime(i.deadline)}</dd>` : ''}
  ${i.parentId ? html`<dt>Parent</dt><dd><a href="${instanceUrl(base, i.parentId)}">${i.parentId}</a> (on its end: ${i.parentClose ?? 'cancel'})</dd>` : ''}
  ${i.scheduleId ? html`<dt>Schedule</dt><dd><a href="${listUrl(base, { ...noFilters(), schedule: i.scheduleId })}">${i.scheduleId}</a>${i.scheduledAt !== null ? ` at ${formatTime(i.scheduledAt)}` : ''}</dd>` : ''}
  ${i.concurrencyKey ? html`<dt>Concurrency key</dt><dd>${i.concurrencyKey}</dd>` : ''}
  ${i.rateLimitKey ? html`<dt>Rate-limit key</dt><dd>${i.rateLimitKey}</dd>` : ''}
  ${i.priority !== 0 ? html`<dt>Priority</dt><dd>${i.priority}</dd>` : ''}
  ${i.leaseOwner && i.status === 'running' ? html`<dt>Worker</dt><dd>${i.leaseOwner}</dd>` : ''}
  ${i.waits.length > 0 ? html`<dt>Waiting for</dt><dd>${i.waits.map((w) => html`<div>signal <code>${w.name}</code>${w.key === null ? ' (no key)' : html` with key <code>${w.key}</code>`}</div>`)}</dd>` : ''}
</dl>
</section>
<div class="grid2">
<section aria-labelledby="input-title"><h2 id="input-title">Input</h2><pre>${formatJson(i.input)}</pre></section>
${
  i.error
    ? html`<section aria-labelledby="error-title"><h2 id="error-title">Error</h2><p><strong>${i.error.name}</strong>: ${i.error.message}</p><details><summary>Error details</summary><pre>${formatJson(i.error)}</pre></details></section>`
    : html`<section aria-labelledby="output-title"><h2 id="output-title">Output</h2>${i.status === 'completed' ? html`<pre>${formatJson(i.output)}</pre>` : html`<p class="muted">Not finished.</p>`}</section>`
}
<section aria-labelledby="custom-title"><h2 id="custom-title">Custom status</h2>${i.customStatus === null ? html`<p class="muted">None set.</p>` : html`<pre>${formatJson(i.customStatus)}</pre>`}</section>
</div>
<section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>${renderTimeline(base, i.journal ?? [], data.readOnly ? null : i.id)}</section>
<section aria-labelledby="children-title"><h2 id="children-title">Children</h2>${renderChildren(data)}</section>`;
}

function finished(i: WorkflowInstance): boolean {
  return FINISHED_STATUSES.includes(i.status);
}

function renderChildren(data: InstancePageData): SafeHtml {
  const { base } = data;
  if (data.children.length === 0) return html`<p class="muted">No children.</p>`;
  return html`<table>
<thead><tr><th scope="col">Id</th><th scope="col">Workflow</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Output or error</th></tr></thead>
<tbody>${data.children.map(
    (c) =>
      html`<tr><td class="id"><a href="${instanceUrl(base, c.id)}">${c.id}</a></td><td>${c.workflow} <span class="muted">v${c.version}</span></td><td>${statusBadge(c.status)}</td><td>${formatTime(c.createdAt)}</td><td>${c.error ? `${c.error.name}: ${c.error.message}` : c.status === 'completed' ? previewJson(c.output) : ''}</td></tr>`,
  )}</tbody>
</table>
${data.moreChildren ? html`<p><a href="${listUrl(base, { ...noFilters(), parent: data.instance.id })}">All children</a></p>` : ''}`;
}

function hiddenId(id: string): SafeHtml {
  return html`<input type="hidden" name="id" value="${id}">`;
}

function renderActions(data: InstancePageData): SafeHtml {
  const { base, instance: i } = data;
  const act = (action: string) => `${base}/actions/${action}`;
  const forms: SafeHtml[] = [];
  for (const [index, wait] of i.waits.entries()) {
    forms.push(html`<form method="post" action="${act('signal')}" aria-label="Send signal ${wait.name}">
<h3>Send <code>${wait.name}</code>${wait.key === null ? '' : html` (key <code>${wait.key}</code>)`}</h3>
${hiddenId(i.id)}<input type="hidden" name="name" value="${wait.name}">${wait.key === null ? '' : html`<input type="hidden" name="key" value="${wait.key}">`}
<label for="wait-payload-${index}">Payload (JSON)</label><textarea id="wait-payload-${index}" name="payload">null</textarea>
<button type="submit">Send signal</button>
</form>`);
  }
  forms.push(html`<form method="post" action="${act('signal')}" aria-label="Send any signal">
<h3>Send a signal</h3>
${hiddenId(i.id)}
<label for="sig-name">Name</label><input id="sig-name" name="name" required>
<label for="sig-key">Key (empty: no key)</label><input id="sig-key" name="key">
<label for="sig-payload">Payload (JSON)</label><textarea id="sig-payload" name="payload">null</textarea>
<label for="sig-id">Sender's id (optional: a repeat is stored once)</label><input id="sig-id" name="dedupeId">
<button type="submit">Send signal</button>
</form>`);
  if (CANCELLABLE.has(i.status) && !i.cancelRequested) {
    forms.push(html`<form method="post" action="${act('cancel')}" aria-label="Cancel">
<h3>Cancel</h3><p class="muted">Stops at its next step and runs its compensations, then ends cancelled.</p>
${hiddenId(i.id)}<label for="cancel-reason">Reason</label><input id="cancel-reason" name="reason">
<button type="submit" class="danger">Cancel instance</button>
</form>`);
  }
  if (!finished(i) && !i.terminateRequested) {
    forms.push(html`<form method="post" action="${act('terminate')}" aria-label="Terminate">
<h3>Terminate</h3><p class="muted">Ends it at once, without compensations.</p>
${hiddenId(i.id)}<label for="terminate-reason">Reason</label><input id="terminate-reason" name="reason">
<button type="submit" class="danger">Terminate instance</button>
</form>`);
  }
  const pause = instancePauseForm(i, act);
  if (pause) forms.push(pause);
  if (RETRYABLE.has(i.status)) {
    forms.push(html`<form method="post" action="${act('retry')}" aria-label="Retry">
<h3>Retry</h3><p class="muted">Runs it again from where it stopped; completed steps keep their results.</p>
${hiddenId(i.id)}<button type="submit">Retry instance</button>
</form>`);
  }
  if (finished(i)) {
    forms.push(html`<form method="post" action="${act('delete')}" aria-label="Delete">
<h3>Delete</h3><p class="muted">Deletes it and its journal for good.</p>
${hiddenId(i.id)}<button type="submit" class="danger">Delete instance</button>
</form>`);
  }
  return html`<section aria-labelledby="actions-title"><h2 id="actions-title">Actions</h2><div class="forms">${forms}</div></section>`;
}
