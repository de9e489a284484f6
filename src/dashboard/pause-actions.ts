import type { WorkflowClient } from '../client/workflow-client.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowPausedWorkflow } from '../storage/workflow-store-pauses.js';
import { html, type SafeHtml } from './html.js';
import { listPath } from './list-query.js';

/** The pause actions a POST may ask for, and what each says once done. */
export const PAUSE_ACTIONS: Record<string, string> = {
  pause: 'Paused: no worker claims it until resumed; a running execution stops at its next step.',
  resume: 'Resumed: it carries on where it stopped.',
  'pause-workflow': 'Workflow paused: no process claims its instances until it is resumed; new starts wait.',
  'resume-workflow': 'Workflow resumed: its instances are claimed again.',
};

/** The workflow actions (their form names a workflow, not an instance). */
export const WORKFLOW_PAUSE_ACTIONS = new Set(['pause-workflow', 'resume-workflow']);

/** The instance page's pause or resume form, for an unfinished instance. */
export function instancePauseForm(i: WorkflowInstance, act: (action: string) => string): SafeHtml | null {
  if (FINISHED_STATUSES.includes(i.status)) return null;
  const id = html`<input type="hidden" name="id" value="${i.id}">`;
  if (i.status === 'paused') {
    return html`<form method="post" action="${act('resume')}" aria-label="Resume">
<h3>Resume</h3><p class="muted">Paused${i.pauseReason ? html` (${i.pauseReason})` : ''}. Resumed, it carries on where it stopped.</p>
${id}<button type="submit">Resume instance</button>
</form>`;
  }
  return html`<form method="post" action="${act('pause')}" aria-label="Pause">
<h3>Pause</h3><p class="muted">No worker claims it until resumed; a running execution stops at its next step. Nothing is undone.</p>
${id}<label for="pause-reason">Reason</label><input id="pause-reason" name="reason">
<button type="submit">Pause instance</button>
</form>`;
}

/**
 * The list page's pause or resume of the workflow it is filtered by (`version`: the version filter,
 * or every version), by whether that exact pause is stored.
 */
export function workflowPauseForm(
  base: string,
  workflow: string,
  version: string,
  paused: readonly WorkflowPausedWorkflow[],
): SafeHtml {
  const v = /^[1-9][0-9]*$/.test(version) ? Number(version) : null;
  const stored = paused.find((p) => p.workflow === workflow && p.version === v);
  const what =
    v === null ? html`<code>${workflow}</code> (every version)` : html`<code>${workflow}</code> version ${v}`;
  const fields = html`<input type="hidden" name="workflow" value="${workflow}">${v === null ? '' : html`<input type="hidden" name="version" value="${String(v)}">`}`;
  if (stored) {
    return html`<form class="panel" method="post" action="${base}/actions/resume-workflow" aria-label="Resume workflow">
<p>${what} is paused${stored.reason ? html` (${stored.reason})` : ''}: no process claims its instances.</p>
${fields}<button type="submit">Resume workflow</button>
</form>`;
  }
  return html`<form class="panel" method="post" action="${base}/actions/pause-workflow" aria-label="Pause workflow">
<p>Pause ${what}: no process claims its instances until it is resumed; new starts wait.</p>
${fields}<label for="pause-workflow-reason">Reason</label><input id="pause-workflow-reason" name="reason">
<button type="submit">Pause workflow</button>
</form>`;
}

/**
 * Runs `pause-workflow` or `resume-workflow` from a form's fields; resolves to where to go next (the
 * list filtered by that workflow). Throws what `WorkflowClient` throws (a `TypeError` for bad input).
 */
export async function runWorkflowPauseAction(
  client: WorkflowClient,
  base: string,
  action: string,
  field: (name: string) => string,
): Promise<string> {
  const workflow = field('workflow').trim();
  if (workflow === '') throw new TypeError('The form has no workflow (field "workflow").');
  const text = field('version').trim();
  const version = text === '' ? undefined : Number(text);
  if (action === 'pause-workflow') {
    const reason = field('reason').trim();
    await client.pauseWorkflow(workflow, { version, ...(reason === '' ? {} : { reason }) });
  } else {
    await client.resumeWorkflow(workflow, { version });
  }
  const query = new URLSearchParams({ workflow, ...(text === '' ? {} : { version: text }), done: action });
  return `${listPath(base)}?${query.toString()}`;
}
