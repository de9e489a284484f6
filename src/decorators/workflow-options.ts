import type { WorkflowRetry } from '../engine/retry-policy.js';
import type { Duration } from '../time/duration.js';

/** When a schedule starts instances of its workflow. */
export interface WorkflowScheduleOptions {
  /** Default: the workflow's name, when it declares one schedule. */
  id?: string;
  /** A cron expression (five or six fields). Give `cron` or `every`. */
  cron?: string;
  /** A fixed interval; occurrences fall on whole multiples of it since the Unix epoch. */
  every?: Duration;
  /** The time zone `cron` is read in (IANA name). Default UTC. */
  timezone?: string;
  /** The input of each instance. */
  input?: unknown;
  /** What to do when an occurrence comes while the previous instance still runs. Default `'skip'`. */
  overlap?: 'skip' | 'allow' | 'cancel-previous';
  /** Occurrences missed while nothing ran: start the latest (`'latest'`, the default), all, or none. */
  catchup?: 'latest' | 'all' | 'none';
  paused?: boolean;
}

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
  schedules?: WorkflowScheduleOptions[];
}
