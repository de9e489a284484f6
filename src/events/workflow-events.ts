import { Observable, Subject } from 'rxjs';
import type { WorkflowEvent } from './workflow-event.js';

/**
 * Every lifecycle and step event of the instances this process runs, as an RxJS `Observable`
 * (like `@nestjs/cqrs`'s `EventBus`). Events are emitted synchronously, before the call that
 * caused them resolves. A subscriber that throws is reported and does not stop the others.
 *
 * @example
 * events.pipe(filter((e) => e.type === 'workflow-failed')).subscribe((e) => alert(e));
 */
export class WorkflowEvents extends Observable<WorkflowEvent> {
  private readonly subject = new Subject<WorkflowEvent>();

  constructor() {
    super((subscriber) => this.subject.subscribe(subscriber));
  }

  /** @internal Publishes an event to every subscriber. */
  emit(event: WorkflowEvent): void {
    try {
      this.subject.next(event);
    } catch (error) {
      // rxjs rethrows a subscriber's error synchronously: it must not break the engine.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  /** @internal Whether anything subscribes now (the engine builds no event when nothing does). */
  get observed(): boolean {
    return this.subject.observed;
  }

  /** @internal Completes the stream (application shutdown). */
  complete(): void {
    this.subject.complete();
  }
}
