import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { EMPTY, filter, interval, map, merge, Observable, Subject, takeUntil } from 'rxjs';
import { WorkflowClient } from '../client/workflow-client.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { WorkflowEvents } from '../events/workflow-events.js';
import type { WorkflowInstanceEvent } from '../events/workflow-event.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import { WorkflowStorage } from '../storage/workflow-storage.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from '../workflows.constants.js';
import { DashboardChanges, type ChangeNotices } from './dashboard-changes.js';
import { DASHBOARD_OPTIONS } from './dashboard.constants.js';
import type { ResolvedDashboardOptions } from './dashboard-options.js';
import type { ListRequest } from './list-query.js';

/** What the page's script receives: never a payload, only that something happened. */
export interface DashboardMessage {
  type: 'workflow' | 'ping';
  data: { event?: string; id?: string; at?: number };
}

/** How often a live page hears a ping (which refreshes an unfinished instance, as a safety net). */
export const PING_INTERVAL_MS = 5_000;

/** What a live page follows: one instance, or the list's first page with the list's filters. */
export type DashboardLiveTarget = { id: string } | { list: ListRequest['options'] };

/** The client reads the live pages poll with (`WorkflowClient` has them). */
export type DashboardLiveReads = Pick<WorkflowClient, 'getStatus' | 'list'>;

/**
 * The server-sent events behind live pages: this process's `WorkflowEvents` (all of them for the
 * list, one instance's for its page), what other processes changed (read from the store once a
 * second while the page is open, sooner on the store's notifications: see `DashboardChanges`),
 * and a ping. Every stream ends when the
 * application shuts down, so open pages never hold the HTTP server open.
 */
@Injectable()
export class DashboardLive implements OnModuleDestroy {
  private readonly closing = new Subject<void>();
  private closed = false;
  private readonly changes: DashboardChanges;

  constructor(
    private readonly events: WorkflowEvents,
    @Inject(WorkflowClient) private readonly client: DashboardLiveReads,
    @Inject(DASHBOARD_OPTIONS) private readonly options: Pick<ResolvedDashboardOptions, 'pageSize'>,
    @Inject(WorkflowStorage) storage: Pick<WorkflowStorage, 'listen'>,
    @Inject(WORKFLOWS_RESOLVED_OPTIONS) workflows: { worker: { enabled: boolean } },
  ) {
    // The store's notifications bring reads forward, in a process whose worker listens already
    // (PostgreSQL's LISTEN connection, or the poll a store without one makes for the worker): the
    // listener says it needs no wake-ups, so the store polls no more for it. A process that serves
    // the dashboard alone reads once a second and listens to nothing.
    const notices: ChangeNotices | null = workflows.worker.enabled
      ? (nudge) => storage.listen(() => nudge(), { needsWakeUps: () => false })
      : null;
    this.changes = new DashboardChanges(undefined, undefined, notices);
  }

  /** Events of the instance or the list `target` follows (`null`: the unfiltered list). */
  stream(target: DashboardLiveTarget | string | null): Observable<DashboardMessage> {
    // A page that (re)connects while the app drains, after `closing` fired, would otherwise get a
    // stream whose pings never end, and the HTTP server would wait for it to close.
    if (this.closed) return EMPTY;
    const follows: DashboardLiveTarget =
      target === null ? { list: {} } : typeof target === 'string' ? { id: target } : target;
    const id = 'id' in follows ? follows.id : null;
    const events = this.events.pipe(
      // Instances' events only (a schedule's have no instance id); the list shows statuses only, so step events don't concern it.
      filter((event): event is WorkflowInstanceEvent => 'id' in event),
      filter((event) => (id === null ? event.type.startsWith('workflow-') : event.id === id)),
      map((event): DashboardMessage => ({ type: 'workflow', data: { event: event.type, id: event.id, at: event.at } })),
    );
    const elsewhere = this.changed(follows).pipe(
      map((): DashboardMessage => ({ type: 'workflow', data: { event: 'changed', ...(id === null ? {} : { id }) } })),
    );
    const pings = interval(PING_INTERVAL_MS).pipe(map((): DashboardMessage => ({ type: 'ping', data: {} })));
    return merge(events, elsewhere, pings).pipe(takeUntil(this.closing));
  }

  onModuleDestroy(): void {
    this.closed = true;
    this.changes.stop();
    this.closing.next();
    this.closing.complete();
  }

  /** Emits when the store shows the instance, or the list's first page, changed (by any process). */
  private changed(follows: DashboardLiveTarget): Observable<void> {
    if ('id' in follows) {
      const { id } = follows;
      return this.changes.watch(`instance:${id}`, async () => {
        try {
          return shown(await this.client.getStatus(id));
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) return 'gone';
          throw error;
        }
      });
    }
    const { list } = follows;
    return this.changes.watch(`list:${JSON.stringify(list)}`, async () =>
      (await this.client.list({ ...list, order: 'desc', limit: this.options.pageSize })).map(shown).join('\n'),
    );
  }
}

/** What a page shows of an instance that changes when the instance does (every write sets `updatedAt`). */
function shown(instance: WorkflowInstance): string {
  return `${instance.id} ${instance.status} ${instance.updatedAt} ${instance.runs}`;
}
