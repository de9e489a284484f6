import type { WorkflowRetry } from '../engine/retry-policy.js';
import type { WorkflowScheduleOptions } from '../scheduler/declared-schedule.js';
import type { Duration } from '../time/duration.js';

/** What `@Workflow(name, options)` takes. */
export interface WorkflowOptions {
  /** Default 1. Instances run to the end on the version they started on. */
  version?: number;
  /** The run deadline of each instance, from its start. Default: none. */
  timeout?: Duration;
  /** The default retry of its steps (over the module's `retry`). */
  retry?: WorkflowRetry;
  /** At most `limit` of its instances run at once, and `perKey` per `concurrencyKey`. */
  concurrency?: { limit?: number; perKey?: number };
  /** At most `max` executions start per `duration`: in all (`limit`) and per `rateLimitKey` (`perKey`). */
  rateLimit?: { limit?: { max: number; duration: Duration }; perKey?: { max: number; duration: Duration } };
  /** Lower is claimed first. Default 0. */
  priority?: number;
  /** Schedules that start its instances (the newest version's declaration counts). See docs/schedules.md. */
  schedules?: WorkflowScheduleOptions[];
}
