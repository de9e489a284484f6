import type { WorkflowScheduleInfo } from '../scheduler/schedule-state.js';
import { formatDuration, formatTime } from './format.js';
import { html, type SafeHtml } from './html.js';
import { notice, page } from './layout.js';
import { instanceUrl, listUrl, noFilters } from './list-query.js';

export interface SchedulesPageData {
  base: string;
  readOnly: boolean;
  schedules: WorkflowScheduleInfo[];
  /** More schedules than the page shows. */
  more: boolean;
  message?: { kind: 'ok' | 'error'; text: string } | null;
}

/** The schedules: cadence, next and last occurrence, and pause / resume / trigger. */
export function renderSchedulesPage(data: SchedulesPageData): SafeHtml {
  const { base } = data;
  const body = html`
<h1>Schedules</h1>
${data.message ? notice(data.message.kind, data.message.text) : ''}
${
  data.schedules.length === 0
    ? html`<p class="panel">No schedules. Declare them on <code>@Workflow</code> or create them with <code>WorkflowSchedules.upsert()</code>.</p>`
    : html`<table>
<caption>By id</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Workflow</th><th scope="col">Cadence</th><th scope="col">State</th><th scope="col">Next</th><th scope="col">Last started</th>${data.readOnly ? '' : html`<th scope="col">Actions</th>`}</tr></thead>
<tbody>${data.schedules.map((s) => row(base, s, data.readOnly))}</tbody>
</table>`
}
${data.more ? html`<p class="muted">Only the first ${data.schedules.length} schedules are shown.</p>` : ''}`;
  return page({ base, title: 'Schedules', readOnly: data.readOnly, current: 'schedules' }, body);
}

function cadence(s: WorkflowScheduleInfo): string {
  const when = s.cron !== null ? `cron ${s.cron}` : s.every !== null ? `every ${formatDuration(s.every)}` : '—';
  return `${when}${s.timezone ? ` (${s.timezone})` : ''}; overlap ${s.overlap}, catch-up ${s.catchup}`;
}

function row(base: string, s: WorkflowScheduleInfo, readOnly: boolean): SafeHtml {
  const action = (name: string, label: string, extra = '') =>
    html`<form method="post" action="${base}/actions/${name}" class="inline"><input type="hidden" name="schedule" value="${s.id}"><button type="submit" class="${extra}" aria-label="${label} schedule ${s.id}">${label}</button></form>`;
  return html`<tr>
<td class="id"><a href="${listUrl(base, { ...noFilters(), schedule: s.id })}" title="Instances this schedule started">${s.id}</a>${s.declared ? html` <span class="muted">(declared)</span>` : ''}</td>
<td>${s.workflow}</td>
<td>${cadence(s)}</td>
<td>${s.error ? html`<span class="status status-failed">error</span> ${s.error}` : s.paused ? html`<span class="status status-suspended">paused</span>` : html`<span class="status status-running">active</span>`}</td>
<td>${formatTime(s.nextAt)}</td>
<td class="id">${s.lastStartedId ? html`<a href="${instanceUrl(base, s.lastStartedId)}">${s.lastStartedId}</a>` : '—'}</td>
${readOnly ? '' : html`<td><div class="actions-row">${s.paused ? action('resume-schedule', 'Resume') : action('pause-schedule', 'Pause', 'secondary')}${action('trigger-schedule', 'Trigger now')}</div></td>`}
</tr>`;
}
