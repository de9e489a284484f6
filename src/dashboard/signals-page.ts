import type { WorkflowUntakenSignal } from '../storage/workflow-store-signals.js';
import { formatDuration, formatTime } from './format.js';
import { html, type SafeHtml } from './html.js';
import { page } from './layout.js';

export interface SignalsPageData {
  base: string;
  readOnly: boolean;
  /** `null`: the store can't list them. */
  signals: WorkflowUntakenSignal[] | null;
  /** The clock's time, for each signal's age. */
  now: number;
}

/**
 * The signals no instance took, newest first, by name and key with their age: a signal sent to a
 * name or key nobody waits for is stored and answers `woken: 0`, and this is where it shows.
 */
export function renderSignalsPage(data: SignalsPageData): SafeHtml {
  const { signals } = data;
  const body = html`
<h1>Signals nobody has taken</h1>
<p class="muted">Among the newest 1,000 signals, those no instance took, newest first. A wait reached later still takes one; an old one here usually means a name or key no workflow waits for.</p>
${
  signals === null
    ? html`<p class="panel">This store can't list them (its <code>untakenSignals()</code> is missing).</p>`
    : signals.length === 0
      ? html`<p class="panel">None: every recent signal was taken.</p>`
      : html`<table>
<caption>Newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Age</th><th scope="col">Sent</th><th scope="col">Id</th></tr></thead>
<tbody>${signals.map(
          (s) => html`<tr>
<td class="id">${s.name}</td>
<td class="id">${s.key ?? html`<span class="muted">(none)</span>`}</td>
<td>${formatDuration(Math.max(0, data.now - s.createdAt))}</td>
<td>${formatTime(s.createdAt)}</td>
<td>#${s.id}</td>
</tr>`,
        )}</tbody>
</table>`
}`;
  return page({ base: data.base, title: 'Signals', readOnly: data.readOnly, current: 'signals' }, body);
}
