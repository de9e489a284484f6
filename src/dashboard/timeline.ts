import type { WorkflowJournalEntry } from '../storage/workflow-instance.js';
import { formatDuration, formatJson, formatTime } from './format.js';
import { html, type HtmlValue, type SafeHtml } from './html.js';
import { instanceUrl } from './list-query.js';
import { forkFromHereForm } from './fork-action.js';

const COMPENSATION_PREFIX = '$compensate:';
const CHILD_WAIT_PREFIX = '$child:';

/**
 * The journal as a timeline, in first-write order: steps with their attempts and durations,
 * sleeps, signal waits with the signal that woke them, children, recorded values and
 * compensations. Entries the engine writes for itself (names starting with `$`) are marked.
 */
export function renderTimeline(
  base: string,
  journal: readonly WorkflowJournalEntry[],
  /** The instance, when each entry may offer "Run again from here" (a fork); `null` on a read-only dashboard. */
  forkOf: string | null = null,
): SafeHtml {
  if (journal.length === 0) return html`<p class="panel">Nothing recorded yet.</p>`;
  return html`<ol class="timeline" aria-label="Journal, oldest first">${journal.map((entry) => renderEntry(base, entry, forkOf))}</ol>`;
}

function renderEntry(base: string, entry: WorkflowJournalEntry, forkOf: string | null): SafeHtml {
  const engine = entry.name.startsWith('$');
  const { label, name, summary, detail } = describe(base, entry);
  return html`<li class="state-${entry.state}${engine ? ' engine' : ''}">
<div class="entry-head"><span class="kind">${label}</span><span class="entry-name">${name}</span><span class="status status-${entry.state}">${stateWord(entry)}</span><span class="meta">${formatTime(entry.createdAt)}</span></div>
<div class="meta">${summary}</div>
${detail}
${forkOf === null ? '' : forkFromHereForm(base, forkOf, entry.name)}
</li>`;
}

function stateWord(entry: WorkflowJournalEntry): string {
  if (entry.kind === 'step' && entry.compensated) return 'compensated';
  return entry.state;
}

interface Described {
  label: string;
  name: string;
  summary: HtmlValue;
  detail: HtmlValue;
}

function describe(base: string, entry: WorkflowJournalEntry): Described {
  const took = formatDuration(entry.updatedAt - entry.createdAt);
  const attempts = entry.attempts ?? 0;
  const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  const error = entry.error ? errorDetail(entry.error) : '';
  switch (entry.kind) {
    case 'step': {
      const result = entry.state === 'completed' ? payload('Result', entry.value) : '';
      if (entry.state === 'waiting') {
        return {
          label: 'Step',
          name: entry.name,
          summary: `${tries} failed so far; next attempt at ${formatTime(entry.wakeAt)}`,
          detail: [error],
        };
      }
      const done =
        entry.state === 'completed' ? `completed after ${tries} in ${took}` : `failed after ${tries} in ${took}`;
      return {
        label: 'Step',
        name: entry.name,
        summary: entry.compensated ? `${done}; its compensation ran` : done,
        detail: [result, error],
      };
    }
    case 'compensation': {
      const step = entry.name.startsWith(COMPENSATION_PREFIX)
        ? entry.name.slice(COMPENSATION_PREFIX.length)
        : entry.name;
      const summary =
        entry.state === 'completed'
          ? `undid step ${step} after ${tries} in ${took}`
          : entry.state === 'failed'
            ? `failed to undo step ${step} after ${tries}`
            : `undoing step ${step}: ${tries} failed so far; next attempt at ${formatTime(entry.wakeAt)}`;
      return { label: 'Compensation', name: step, summary, detail: error };
    }
    case 'sleep':
      return {
        label: 'Sleep',
        name: entry.name,
        summary:
          entry.state === 'completed'
            ? `slept until ${formatTime(entry.wakeAt ?? entry.updatedAt)} (${took})`
            : `sleeping until ${formatTime(entry.wakeAt)}`,
        detail: '',
      };
    case 'signal': {
      const wait = entry.signal;
      const child = entry.name.startsWith(CHILD_WAIT_PREFIX);
      const what = child
        ? html`the end of child ${wait?.key ? html`<a href="${instanceUrl(base, wait.key)}">${wait.key}</a>` : ''}`
        : html`signal <code>${wait?.name ?? '?'}</code>${wait?.key === null || wait === undefined ? ' (no key)' : html` with key <code>${wait.key}</code>`}`;
      if (entry.state === 'completed') {
        return {
          label: child ? 'Child end' : 'Wait',
          name: entry.name,
          summary: html`waited for ${what}; woken by signal #${entry.signalId ?? '?'} at ${formatTime(entry.updatedAt)} after ${took}`,
          detail: payload(child ? 'How the child ended' : 'Signal payload', entry.value),
        };
      }
      if (entry.state === 'failed') {
        return {
          label: 'Wait',
          name: entry.name,
          summary: html`waited for ${what}; timed out after ${took}`,
          detail: error,
        };
      }
      return {
        label: child ? 'Child end' : 'Wait',
        name: entry.name,
        summary: html`waiting for ${what}${entry.wakeAt ? `, until ${formatTime(entry.wakeAt)}` : ''}`,
        detail: '',
      };
    }
    case 'child':
      return {
        label: 'Child',
        name: entry.name,
        summary: html`started child ${entry.childId ? html`<a href="${instanceUrl(base, entry.childId)}">${entry.childId}</a>` : ''}`,
        detail: '',
      };
    case 'value':
      return {
        label: 'Value',
        name: entry.name,
        summary: html`recorded <code>${formatJson(entry.value, 200)}</code>`,
        detail: '',
      };
    default:
      return { label: String(entry.kind), name: entry.name, summary: took, detail: payload('Entry', entry) };
  }
}

function payload(label: string, value: unknown): SafeHtml {
  return html`<details><summary>${label}</summary><pre>${formatJson(value)}</pre></details>`;
}

function errorDetail(error: { name: string; message: string }): SafeHtml {
  return html`<div><strong>${error.name}</strong>: ${error.message}</div><details><summary>Error details</summary><pre>${formatJson(error)}</pre></details>`;
}
