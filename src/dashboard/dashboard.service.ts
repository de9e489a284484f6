import { Inject, Injectable } from '@nestjs/common';
import { WorkflowClient } from '../client/workflow-client.js';
import { WorkflowSchedules } from '../client/workflow-schedules.js';
import { WorkflowError } from '../errors/workflow.error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { WorkflowRegistry } from '../registry/workflow-registry.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { DASHBOARD_OPTIONS } from './dashboard.constants.js';
import type { ResolvedDashboardOptions } from './dashboard-options.js';
import { html, type SafeHtml } from './html.js';
import { renderInstancePage } from './instance-page.js';
import { notice, page } from './layout.js';
import { renderListPage } from './list-page.js';
import { instanceUrl, listPath, parseListQuery } from './list-query.js';
import { runScheduleAction, SCHEDULE_ACTIONS } from './schedule-actions.js';
import { PAUSE_ACTIONS, runWorkflowPauseAction, WORKFLOW_PAUSE_ACTIONS, workflowPauseForm } from './pause-actions.js';
import { renderSchedulesPage } from './schedules-page.js';
import { forkConfirmationPage, runFork } from './fork-action.js';
import {
  bulkConfirmationPage,
  bulkDoneMessage,
  bulkPanel,
  countMatching,
  matchesEverything,
  parseBulkForm,
  runBulk,
} from './bulk-panel.js';
import { renderSignalsPage } from './signals-page.js';
import { renderVersionsPage } from './versions-page.js';
import { countUnfinishedByVersion, versionRows } from './version-counts.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import type { ResolvedWorkflowsOptions } from '../workflows-module-options.js';

/** A page to send: its status code and HTML, or a redirect (303, after an action). */
export type DashboardResponse = { status: number; body: SafeHtml } | { redirect: string };

/** The actions a POST may ask for. */
export const DASHBOARD_ACTIONS = [
  'signal',
  'cancel',
  'terminate',
  'retry',
  'delete',
  'pause-schedule',
  'resume-schedule',
  'trigger-schedule',
  'pause',
  'resume',
  'pause-workflow',
  'resume-workflow',
  'fork',
  'bulk',
] as const;
export type DashboardAction = (typeof DASHBOARD_ACTIONS)[number];

const CHILDREN_SHOWN = 100;

/** Messages after an action, by the code the redirect carries (never text from the request). */
const DONE: Record<string, string> = {
  signal: 'Signal sent.',
  cancel: 'Cancel requested: the instance stops at its next step, runs its compensations and ends cancelled.',
  terminate: 'Terminate requested: the instance ends cancelled, without compensations.',
  retry: 'Retry requested: the instance runs again from where it stopped.',
  delete: 'Instance deleted.',
  fork: 'Forked: this new instance runs again from the chosen step; the instance it came from is unchanged.',
  ...SCHEDULE_ACTIONS,
  ...PAUSE_ACTIONS,
};

const SCHEDULES_SHOWN = 500;
const SIGNALS_SHOWN = 100;
/** The versions page counts at most this many unfinished instances (ten list pages). */
const VERSIONS_COUNT_CAP = 10_000;

/** The confirmation for the query's `done` code; only own keys, so `?done=constructor` finds nothing. */
function doneMessage(messages: Record<string, string>, query: Record<string, unknown> | undefined): string | undefined {
  const code = query?.done;
  return typeof code === 'string' && Object.hasOwn(messages, code) ? messages[code] : undefined;
}

/**
 * The dashboard's pages and actions, over `WorkflowClient` (so payloads come decoded by the
 * configured codec, and every action follows the client's rules). Framework-neutral: the
 * controller only moves requests in and responses out.
 */
@Injectable()
export class DashboardService {
  constructor(
    private readonly client: WorkflowClient,
    private readonly scheduleAdmin: WorkflowSchedules,
    private readonly registry: WorkflowRegistry,
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) private readonly workflows: ResolvedWorkflowsOptions,
  ) {}

  /** The instances page for a query string. */
  async list(
    base: string,
    query: Record<string, unknown> | undefined,
    message: { kind: 'ok' | 'error'; text: string } | null = null,
  ): Promise<DashboardResponse> {
    const request = parseListQuery(query);
    const workflows = [...new Set(this.registry.all().map((w) => w.name))].sort();
    const size = this.options.pageSize;
    let instances: WorkflowInstance[] = [];
    let hasOlder = false;
    let hasNewer = false;
    if (request.errors.length === 0) {
      if (request.before) {
        // Newer than the position: read upwards, then show newest first.
        const rows = await this.client.list({
          ...request.options,
          order: 'asc',
          after: request.before,
          limit: size + 1,
        });
        hasNewer = rows.length > size;
        instances = rows.slice(0, size).reverse();
        hasOlder = true;
      } else {
        const rows = await this.client.list({
          ...request.options,
          order: 'desc',
          after: request.after ?? undefined,
          limit: size + 1,
        });
        hasOlder = rows.length > size;
        instances = rows.slice(0, size);
        hasNewer = request.after !== null;
      }
    }
    const done = doneMessage(DONE, query) ?? bulkDoneMessage(query);
    const { workflow, version } = request.filters;
    // Filtered by one workflow, the page offers to pause it (or resume it) for every process.
    const workflowPause =
      this.options.readOnly || workflow === ''
        ? null
        : workflowPauseForm(base, workflow, version, await this.client.pausedWorkflows());
    const body = renderListPage({
      base,
      readOnly: this.options.readOnly,
      request,
      instances,
      hasOlder,
      hasNewer,
      workflows,
      workflowPause,
      bulk: this.options.readOnly ? null : bulkPanel(base, request),
      message: message ?? (done ? { kind: 'ok', text: done } : null),
    });
    return { status: request.errors.length > 0 ? 400 : 200, body };
  }

  /** The schedules page (the first 500, by id). */
  async schedules(
    base: string,
    query: Record<string, unknown> | undefined,
    message: { kind: 'ok' | 'error'; text: string } | null = null,
  ): Promise<DashboardResponse> {
    const schedules = await this.scheduleAdmin.list({ limit: SCHEDULES_SHOWN + 1 });
    const text = doneMessage(SCHEDULE_ACTIONS, query);
    const done = message ?? (text ? { kind: 'ok' as const, text } : null);
    const body = renderSchedulesPage({
      base,
      readOnly: this.options.readOnly,
      schedules: schedules.slice(0, SCHEDULES_SHOWN),
      more: schedules.length > SCHEDULES_SHOWN,
      message: done,
    });
    return { status: 200, body };
  }

  /** Unfinished instances per workflow version beside the live processes that declare each (`versions-page.ts`). */
  async versions(base: string): Promise<DashboardResponse> {
    const [counted, processes] = await Promise.all([
      countUnfinishedByVersion(this.client, VERSIONS_COUNT_CAP),
      this.client.processes(),
    ]);
    const rows = versionRows(
      counted.counts,
      processes === null ? { processes: null, here: this.registry.versions() } : { processes },
    );
    const body = renderVersionsPage({
      base,
      readOnly: this.options.readOnly,
      rows,
      processes,
      cap: VERSIONS_COUNT_CAP,
      capped: counted.capped,
    });
    return { status: 200, body };
  }

  /** The signals no instance took (the newest 100 of them). */
  async signals(base: string): Promise<DashboardResponse> {
    const signals = await this.client.untakenSignals({ limit: SIGNALS_SHOWN });
    const body = renderSignalsPage({ base, readOnly: this.options.readOnly, signals, now: this.workflows.clock.now() });
    return { status: 200, body };
  }

  /** An instance's page; 404 for an unknown id. */
  async instance(
    base: string,
    query: Record<string, unknown> | undefined,
    message: { kind: 'ok' | 'error'; text: string } | null = null,
  ): Promise<DashboardResponse> {
    const id = typeof query?.id === 'string' ? query.id : '';
    if (id === '')
      return this.problem(base, 400, 'Which instance? Open it from the list (the page needs ?id=<instance id>).');
    let instance;
    try {
      instance = await this.client.getStatus(id, { journal: true });
    } catch (error) {
      if (error instanceof WorkflowNotFoundError)
        return this.problem(base, 404, `No instance has the id "${id}". It may have been deleted or purged.`);
      throw error;
    }
    const children = await this.client.list({ parentId: id, limit: CHILDREN_SHOWN + 1 });
    const text = doneMessage(DONE, query);
    const done = message ?? (text ? { kind: 'ok' as const, text } : null);
    const body = renderInstancePage({
      base,
      readOnly: this.options.readOnly,
      instance,
      children: children.slice(0, CHILDREN_SHOWN),
      moreChildren: children.length > CHILDREN_SHOWN,
      message: done,
    });
    return { status: 200, body };
  }

  /**
   * Runs an action from a form. Success redirects (303) to the instance (the list after a delete);
   * a refusal renders the instance page with the reason: 409 for a state that doesn't allow it,
   * 400 for bad input, 404 for an unknown instance.
   */
  async act(base: string, action: string, form: Record<string, unknown> | undefined): Promise<DashboardResponse> {
    if (this.options.readOnly) return this.problem(base, 403, 'This dashboard is read-only: actions are turned off.');
    if (!(DASHBOARD_ACTIONS as readonly string[]).includes(action)) {
      return this.problem(base, 404, `Unknown action "${action}". The actions are ${DASHBOARD_ACTIONS.join(', ')}.`);
    }
    if (form === undefined || form === null || typeof form !== 'object') {
      return this.problem(
        base,
        400,
        "The form came without a body. Post it as application/x-www-form-urlencoded, with the app's body parser on.",
      );
    }
    const field = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : '');
    if (action in SCHEDULE_ACTIONS) return this.actOnSchedule(base, action, field('schedule'));
    if (WORKFLOW_PAUSE_ACTIONS.has(action)) return this.actOnWorkflow(base, action, field);
    if (action === 'bulk') return this.actOnMatches(base, form, field);
    const id = field('id');
    if (id === '') return this.problem(base, 400, 'The form has no instance id (field "id").');
    try {
      switch (action as DashboardAction) {
        case 'fork': {
          const step = field('step');
          if (step === '') throw new TypeError('The form has no step to run again from (field "step").');
          if (field('confirmed') !== 'yes') {
            const source = await this.client.getStatus(id);
            return { status: 200, body: forkConfirmationPage(base, this.options.readOnly, source, step) };
          }
          return { redirect: await runFork(this.client, base, id, step) };
        }
        case 'signal': {
          const name = field('name').trim();
          if (name === '') throw new TypeError('The signal needs a name (field "name").');
          let payload: unknown = null;
          const text = field('payload').trim();
          if (text !== '') {
            try {
              payload = JSON.parse(text);
            } catch (error) {
              throw new TypeError(
                `The payload is not JSON (${(error as Error).message}). Write a JSON value, such as {"at": "2026-01-01"} or null.`,
                { cause: error },
              );
            }
          }
          const key = field('key');
          const dedupeId = field('dedupeId').trim();
          await this.client.signal(name, payload, {
            ...(key === '' ? {} : { key }),
            ...(dedupeId === '' ? {} : { id: dedupeId }),
          });
          break;
        }
        case 'cancel':
          await this.client.cancel(id, field('reason').trim() || undefined);
          break;
        case 'terminate':
          await this.client.terminate(id, field('reason').trim() || undefined);
          break;
        case 'retry':
          await this.client.retry(id);
          break;
        case 'pause':
          await this.client.pause(id, field('reason').trim() || undefined);
          break;
        case 'resume':
          await this.client.resume(id);
          break;
        case 'delete':
          await this.client.delete(id);
          return { redirect: `${listPath(base)}?done=delete` };
      }
    } catch (error) {
      const status =
        error instanceof WorkflowNotFoundError
          ? 404
          : error instanceof TypeError
            ? 400
            : error instanceof WorkflowError
              ? 409
              : null;
      if (status === null) throw error;
      const text = `Could not ${action}: ${(error as Error).message}`;
      if (status === 404) return this.problem(base, 404, text);
      const shown = await this.instance(base, { id }, { kind: 'error', text });
      return 'body' in shown ? { status, body: shown.body } : shown;
    }
    return { redirect: `${instanceUrl(base, id)}&done=${action}` };
  }

  private async actOnSchedule(base: string, action: string, schedule: string): Promise<DashboardResponse> {
    if (schedule === '') return this.problem(base, 400, 'The form has no schedule id (field "schedule").');
    try {
      return { redirect: await runScheduleAction(this.scheduleAdmin, base, action, schedule) };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError)
        return this.problem(base, 404, `Could not ${action.replace('-', ' ')}: ${error.message}`);
      if (!(error instanceof WorkflowError || error instanceof TypeError)) throw error;
      const shown = await this.schedules(
        base,
        {},
        { kind: 'error', text: `Could not ${action.replace('-', ' ')}: ${error.message}` },
      );
      return 'body' in shown ? { status: 409, body: shown.body } : shown;
    }
  }

  /** `pause-workflow` / `resume-workflow`: back to the list filtered by the workflow, or the list with the reason. */
  private async actOnWorkflow(
    base: string,
    action: string,
    field: (name: string) => string,
  ): Promise<DashboardResponse> {
    try {
      return { redirect: await runWorkflowPauseAction(this.client, base, action, field) };
    } catch (error) {
      if (!(error instanceof WorkflowError || error instanceof TypeError)) throw error;
      const shown = await this.list(
        base,
        { workflow: field('workflow') },
        {
          kind: 'error',
          text: `Could not ${action.replace('-', ' ')}: ${error.message}`,
        },
      );
      return 'body' in shown ? { status: error instanceof TypeError ? 400 : 409, body: shown.body } : shown;
    }
  }

  /**
   * `bulk`: without `confirmed`, the confirmation page (the action, how many instances match now,
   * and the `all` confirmation when the filter matches everything); confirmed, the action on every
   * match, then the list with what it did. Bad input: 400 with the reason, nothing done.
   */
  private async actOnMatches(
    base: string,
    form: Record<string, unknown>,
    field: (name: string) => string,
  ): Promise<DashboardResponse> {
    let request;
    let everything: boolean;
    try {
      request = parseBulkForm(form);
      everything = matchesEverything(request.filter, this.workflows.clock.now());
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      return this.problem(base, 400, `Could not act on the matches: ${error.message}`);
    }
    const confirmed = field('confirmed') === 'yes';
    const allTyped = field('all').trim() === 'all';
    if (!confirmed || (everything && !allTyped)) {
      const matching = await countMatching(this.client, request.filter);
      const refused = confirmed
        ? 'This filter matches every instance: type all to confirm, or narrow the filter.'
        : null;
      const body = bulkConfirmationPage(base, this.options.readOnly, request, matching, everything, refused);
      return { status: refused ? 400 : 200, body };
    }
    try {
      return { redirect: await runBulk(this.client, base, request, everything) };
    } catch (error) {
      if (!(error instanceof WorkflowError || error instanceof TypeError)) throw error;
      return this.problem(
        base,
        error instanceof TypeError ? 400 : 409,
        `Could not act on the matches: ${error.message}`,
      );
    }
  }

  /** A page that only says what went wrong. */
  problem(base: string, status: number, text: string): DashboardResponse {
    const body = page(
      { base, title: status === 404 ? 'Not found' : 'Refused', readOnly: this.options.readOnly, current: 'instance' },
      html`<p><a href="${listPath(base)}">← Instances</a></p><h1>${status === 404 ? 'Not found' : status === 403 ? 'Refused' : 'Could not do that'}</h1>${notice('error', text)}`,
    );
    return { status, body };
  }
}
