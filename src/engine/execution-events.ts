import type { WorkflowEventBody } from '../events/workflow-event.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import type { ExecutionObserver } from './workflow-observer.js';

/** What an execution's events need of the engine's options. */
export interface ExecutionEventOptions {
  clock: WorkflowClock;
  emit(event: WorkflowEventBody & { id: string; workflow: string; version: number; at: number }): void;
  /** Whether anything listens to `emit()` now; when it says no, no event is built. Default: always. */
  observed?(): boolean;
}

/** An event of an execution: its telemetry hears it, and the application's listeners (when any listen). */
export function emitExecutionEvent(
  options: ExecutionEventOptions,
  { instance, observe }: { instance: WorkflowInstance; observe: ExecutionObserver },
  body: WorkflowEventBody,
): void {
  observe.event(body);
  if (options.observed?.() === false) return;
  // `Object.assign` copies the bodies' several shapes faster than a spread does.
  const where = {
    id: instance.id,
    workflow: instance.workflow,
    version: instance.version,
    at: options.clock.now(),
  };
  options.emit(Object.assign({}, body, where) as never);
}
