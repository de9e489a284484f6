import { formatTime } from './format.js';
import { html, type SafeHtml } from './html.js';
import { page } from './layout.js';
import { listPath } from './list-query.js';
import { PAUSED_STATUS, UNFINISHED_STATUSES } from '../storage/workflow-instance.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';

/** The list page filtered to a version's unfinished instances. */
function unfinishedList(base: string, row: VersionRow): string {
  const query = new URLSearchParams({ workflow: row.workflow, version: String(row.version) });
  for (const status of [...UNFINISHED_STATUSES, PAUSED_STATUS]) query.append('status', status);
  return `${listPath(base)}?${query.toString()}`;
}

/** One workflow version: its unfinished instances counted, and who declares it. */
export interface VersionRow {
  workflow: string;
  version: number;
  unfinished: number;
  /** The worker ids of the live processes that declare it; without process records, `'this process'` when this one does. */
  declaredBy: string[];
}

export interface VersionsPageData {
  base: string;
  readOnly: boolean;
  rows: VersionRow[];
  /** The live processes' records; `null` when the store keeps none (the rows then say what this process declares). */
  processes: WorkflowProcessRecord[] | null;
  /** The count stopped at this many unfinished instances in all (a count past it shows as a floor). */
  cap: number;
  capped: boolean;
}

/**
 * Per workflow, the versions that still have unfinished instances (and how many), beside the live
 * worker processes that declare each (from their records in the store), so an operator sees what a
 * deploy can still break: a version with unfinished instances that no live process declares is
 * flagged (nothing claims its instances), and one that only some processes declare says so (a
 * deploy that replaces those leaves them stranded). Then the processes themselves.
 */
export function renderVersionsPage(data: VersionsPageData): SafeHtml {
  const { rows, capped, cap, processes } = data;
  const floor = capped ? '+' : '';
  const live = processes?.length ?? 0;
  const who =
    processes === null
      ? 'This store keeps no process records, so "declared" is what this process declares.'
      : `${live === 0 ? 'No' : live.toLocaleString('en-US')} live worker process${live === 1 ? '' : 'es'} recorded ${live === 1 ? 'itself' : 'themselves'} in the store (each does every 15 s; one not seen for a minute is left out).`;
  const body = html`
<h1>Workflow versions</h1>
<p class="muted">Unfinished instances by workflow and version, and the live worker processes that declare each version. ${who} A version with unfinished instances that no live process declares is never claimed: deploy code that declares it, or keep that class until its instances finish. Before deploying a change, replay them against the new code (<code>replayStored()</code>, see docs/deploying-changes.md).${
    capped ? html` Counted up to ${cap.toLocaleString('en-US')} unfinished instances in all: figures are floors.` : ''
  }</p>
${
  rows.length === 0
    ? html`<p class="panel">No workflow version is declared by a live process or has unfinished instances.</p>`
    : html`<table>
<caption>By workflow, newest version first</caption>
<thead><tr><th scope="col">Workflow</th><th scope="col">Version</th><th scope="col">Unfinished</th><th scope="col">Declared by</th><th scope="col">Deploy risk</th></tr></thead>
<tbody>${rows.map(
        (row) => html`<tr>
<td class="id">${row.workflow}</td>
<td>${row.version}</td>
<td>${
          row.unfinished === 0
            ? html`<span class="muted">0</span>`
            : html`<a href="${unfinishedList(data.base, row)}">${row.unfinished.toLocaleString('en-US')}${floor}</a>`
        }</td>
<td>${declaredBy(row, processes)}</td>
<td>${risk(row, processes)}</td>
</tr>`,
      )}</tbody>
</table>`
}
${processes === null || processes.length === 0 ? '' : processTable(processes)}`;
  return page({ base: data.base, title: 'Versions', readOnly: data.readOnly, current: 'versions' }, body);
}

/** The most worker ids a row names (a fleet of replicas would make it a wall of ids: the processes table lists them all). */
const NAMED = 5;

function declaredBy(row: VersionRow, processes: WorkflowProcessRecord[] | null): SafeHtml {
  if (row.declaredBy.length === 0) return html`<strong>none</strong>`;
  if (processes === null) return html`${row.declaredBy.join(', ')}`;
  const named = row.declaredBy.slice(0, NAMED);
  const more = row.declaredBy.length - named.length;
  return html`${row.declaredBy.length} of ${processes.length} <span class="muted">(${named.join(', ')}${more > 0 ? ` and ${more} more` : ''})</span>`;
}

/** What a deploy can break for the row's version. */
function risk(row: VersionRow, processes: WorkflowProcessRecord[] | null): SafeHtml | string {
  if (row.unfinished === 0) return '';
  if (row.declaredBy.length === 0)
    return html`<strong>Stranded: no live process declares this version; its instances wait</strong>`;
  if (processes !== null && row.declaredBy.length < processes.length)
    return html`Only ${row.declaredBy.length} of ${processes.length} processes can run these; keep one that declares it until they finish`;
  return '';
}

function processTable(processes: WorkflowProcessRecord[]): SafeHtml {
  return html`<table>
<caption>Live worker processes, oldest first</caption>
<thead><tr><th scope="col">Worker id</th><th scope="col">Host</th><th scope="col">PID</th><th scope="col">Started</th><th scope="col">Last seen</th><th scope="col">Declares</th></tr></thead>
<tbody>${processes.map(
    (process) => html`<tr>
<td class="id">${process.owner}</td>
<td>${process.host}</td>
<td>${process.pid}</td>
<td>${formatTime(process.startedAt)}</td>
<td>${formatTime(process.seenAt)}</td>
<td>${process.declared.map(({ workflow, version }) => `${workflow}@${version}`).join(', ')}</td>
</tr>`,
  )}</tbody>
</table>`;
}
