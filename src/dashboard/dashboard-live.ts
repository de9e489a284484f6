import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { EMPTY, filter, interval, map, merge, Observable, Subject, takeUntil } from 'rxjs';
import { WorkflowEvents } from '../events/workflow-events.js';
import type { WorkflowInstanceEvent } from '../events/workflow-event.js';

/** What the page's script receives: never a payload, only that something happened. */
export interface DashboardMessage {
  type: 'workflow' | 'ping';
  data: { event?: string; id?: string; at?: number };
}

/** How often a live page hears a ping (which refreshes an unfinished instance run elsewhere). */
export const PING_INTERVAL_MS = 5_000;

/**
 * The server-sent events behind live pages: this process's `WorkflowEvents` (all of them for the
 * list, one instance's for its page), and a ping. Every stream ends when the application shuts
 * down, so open pages never hold the HTTP server open.
 */
@Injectable()
export class DashboardLive implements OnModuleDestroy {
  private readonly closing = new Subject<void>();
  private closed = false;

  constructor(private readonly events: WorkflowEvents) {}

  /** Events of instance `id`, or of every instance when `id` is `null`. */
  stream(id: string | null): Observable<DashboardMessage> {
    // A page that (re)connects while the app drains, after `closing` fired, would otherwise get a
    // stream whose pings never end, and the HTTP server would wait for it to close.
    if (this.closed) return EMPTY;
    const events = this.events.pipe(
      // Instances' events only (a schedule's have no instance id); the list shows statuses only, so step events don't concern it.
      filter((event): event is WorkflowInstanceEvent => 'id' in event),
      filter((event) => (id === null ? event.type.startsWith('workflow-') : event.id === id)),
      map((event): DashboardMessage => ({ type: 'workflow', data: { event: event.type, id: event.id, at: event.at } })),
    );
    const pings = interval(PING_INTERVAL_MS).pipe(map((): DashboardMessage => ({ type: 'ping', data: {} })));
    return merge(events, pings).pipe(takeUntil(this.closing));
  }

  onModuleDestroy(): void {
    this.closed = true;
    this.closing.next();
    this.closing.complete();
  }
}
