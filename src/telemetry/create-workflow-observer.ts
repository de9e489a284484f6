import { NO_OBSERVER, type WorkflowObserver } from '../engine/workflow-observer.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowClock } from '../time/workflow-clock.js';
import { loadOpenTelemetry } from './load-open-telemetry.js';
import { OpenTelemetryObserver } from './open-telemetry-observer.js';

/** The due backlog is counted up to this many: a gauge that says "10,000 or more" has done its job. */
export const DUE_BACKLOG_CAP = 10_000;

/**
 * The module's telemetry: OpenTelemetry spans and metrics when `enabled` and `@opentelemetry/api`
 * is installed (an optional peer), else nothing at all. With `encrypted` (a codec is configured),
 * spans carry errors by name only: their messages and stacks are encrypted at rest.
 */
export async function createWorkflowObserver(
  enabled: boolean,
  storage: WorkflowStorage,
  clock: WorkflowClock,
  encrypted: boolean,
): Promise<WorkflowObserver> {
  if (!enabled) return NO_OBSERVER;
  const api = await loadOpenTelemetry();
  if (!api) return NO_OBSERVER;
  return new OpenTelemetryObserver(api, {
    dueBacklog: () => storage.countDue(clock.now(), DUE_BACKLOG_CAP),
    errorMessages: !encrypted,
  });
}
