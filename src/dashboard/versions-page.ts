import { html, type SafeHtml } from './html.js';
import { page } from './layout.js';
import { listPath } from './list-query.js';
import { PAUSED_STATUS, UNFINISHED_STATUSES } from '../storage/workflow-instance.js';

/** The list page filtered to a version's unfinished instances. */
function unfinishedList(base: string, row: VersionRow): string {
  const query = new URLSearchParams({ workflow: row.workflow, version: String(row.version) });
  for (const status of [...UNFINISHED_STATUSES, PAUSED_STATUS]) query.append('status', status);
  return `${listPath(base)}?${query.toString()}`;
}

/** One workflow version: its unfinished instances counted, and whether this process declares it. */
export interface VersionRow {
  workflow: string;
  version: number;
  unfinished: number;
  declaredHere: boolean;
}

export interface VersionsPageData {
  base: string;
  readOnly: boolean;
  rows: VersionRow[];
  /** The count stopped at this many unfinished instances in all (a count past it shows as a floor). */
  cap: number;
  capped: boolean;
}

/**
 * Per workflow, the versions that still have unfinished instances (and how many), beside the versions
 * this process declares. Processes record no declarations in the store, so "declared" is this
 * process's own registry; an unfinished version no process declares is never claimed.
 */
export function renderVersionsPage(data: VersionsPageData): SafeHtml {
  const { rows, capped, cap } = data;
  const floor = capped ? '+' : '';
  const body = html`
<h1>Workflow versions</h1>
<p class="muted">Unfinished instances by workflow and version, and whether this process declares that version. Processes don't record what they declare, so this is this process's view: a version with unfinished instances that no running process declares is never claimed. Before deploying a change, replay them against the new code (<code>replayStored()</code>, see docs/deploying-changes.md).${
    capped ? html` Counted up to ${cap.toLocaleString('en-US')} unfinished instances in all: figures are floors.` : ''
  }</p>
${
  rows.length === 0
    ? html`<p class="panel">No workflow version is declared here or has unfinished instances.</p>`
    : html`<table>
<caption>By workflow, newest version first</caption>
<thead><tr><th scope="col">Workflow</th><th scope="col">Version</th><th scope="col">Unfinished</th><th scope="col">Declared by this process</th></tr></thead>
<tbody>${rows.map(
        (row) => html`<tr>
<td class="id">${row.workflow}</td>
<td>${row.version}</td>
<td>${
          row.unfinished === 0
            ? html`<span class="muted">0</span>`
            : html`<a href="${unfinishedList(data.base, row)}">${row.unfinished.toLocaleString('en-US')}${floor}</a>`
        }</td>
<td>${row.declaredHere ? 'yes' : html`<strong>no</strong>`}</td>
</tr>`,
      )}</tbody>
</table>`
}`;
  return page({ base: data.base, title: 'Versions', readOnly: data.readOnly, current: 'versions' }, body);
}
