import type { WorkflowClient } from '../client/workflow-client.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { html, type SafeHtml } from './html.js';
import { notice, page } from './layout.js';
import { instanceUrl } from './list-query.js';

/**
 * "Run again from here" on a timeline entry: a form that asks for the confirmation page first (the
 * fork is made only by that page's own form, which says `confirmed`). Entries the engine writes
 * for itself (`$...`) can't be forked from, so they get none.
 */
export function forkFromHereForm(base: string, id: string, step: string): SafeHtml | '' {
  if (step.startsWith('$')) return '';
  return html`<form class="inline" method="post" action="${base}/actions/fork" aria-label="Run again from ${step}">
<input type="hidden" name="id" value="${id}"><input type="hidden" name="step" value="${step}">
<button type="submit" class="small">Run again from here</button>
</form>`;
}

/** The page that asks before forking `source` from `step`. */
export function forkConfirmationPage(
  base: string,
  readOnly: boolean,
  source: WorkflowInstance,
  step: string,
): SafeHtml {
  return page(
    { base, title: `Run ${source.id} again from ${step}`, readOnly, current: 'instance' },
    html`<p><a href="${instanceUrl(base, source.id)}">← ${source.id}</a></p>
<h1>Run again from <code>${step}</code>?</h1>
<form class="panel" method="post" action="${base}/actions/fork" aria-label="Confirm run again">
${notice('ok', html`A new instance of <code>${source.workflow}</code> version ${source.version} starts with the journal of <code>${source.id}</code> before <code>${step}</code>: <code>${step}</code> and everything after it run again, with the same input. <code>${source.id}</code> itself is left as it is (${source.status}).`)}
<input type="hidden" name="id" value="${source.id}"><input type="hidden" name="step" value="${step}"><input type="hidden" name="confirmed" value="yes">
<div class="actions-row"><button type="submit">Run again from ${step}</button><a href="${instanceUrl(base, source.id)}">Keep it as it is</a></div>
</form>`,
  );
}

/** Forks `id` from `step` (confirmed); resolves to the new instance's page. Throws what `fork()` throws. */
export async function runFork(client: WorkflowClient, base: string, id: string, step: string): Promise<string> {
  const fork = await client.fork(id, { fromStep: step });
  return `${instanceUrl(base, fork.id)}&done=fork`;
}
