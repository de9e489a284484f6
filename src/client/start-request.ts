import { shownValue } from '../errors/shown-value.js';
import { randomUUID } from 'node:crypto';
import { sameJson, toJsonValue } from '../engine/json-value.js';
import { WorkflowAlreadyStartedError } from '../errors/workflow-already-started.error.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { checkOptions } from '../options/known-keys.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';
import { parsePositiveDuration, type Duration } from '../time/duration.js';
import { parseDebounceOption, type WorkflowDebounceOptions } from './debounce-option.js';
import { toEpochOption } from './epoch-option.js';

export interface WorkflowStartOptions {
  /** The instance's id (idempotency key). Default: a random UUID. */
  id?: string;
  /** Default: the class's version, or the newest version of a name. */
  version?: number;
  concurrencyKey?: string;
  rateLimitKey?: string;
  /** Lower is claimed first. Default: the workflow's. */
  priority?: number;
  /** Run deadline from the start; default the workflow's `timeout`. */
  timeout?: Duration;
  /** Don't run before this time. */
  startAt?: Date | number;
  /** The application's transaction (a `pg` client inside BEGIN...): the instance commits with it. */
  transaction?: unknown;
  /**
   * Debounce: while the instance a start with this key made has not started running, another start
   * with the key gives it its input and moves its start to now + `period` (never past its first
   * start + `maxWait`), and resolves to the same handle; once it runs, the next start makes a new
   * instance. Not with `id` or `startAt`. See docs/flow-control.md.
   */
  debounce?: WorkflowDebounceOptions;
}

/** The workflow a start names, as the registry resolves it. */
export interface StartedWorkflow {
  name: string;
  version: number;
  /** Its run timeout in ms, or `null`. */
  timeout: number | null;
  priority: number;
}

/** What `parseStartRequest()` reads besides the call's arguments. */
export interface StartRequestContext {
  /** The workflow at `version` (default: the reference's); throws `UnknownWorkflowError`. */
  resolve(version: number | undefined): StartedWorkflow;
  now(): number;
  /** The caller's trace context for the new instance (a start span, with telemetry). */
  traceContext(workflow: string, id: string): Record<string, string> | null;
}

const START_OPTIONS = [
  'id',
  'version',
  'concurrencyKey',
  'rateLimitKey',
  'priority',
  'timeout',
  'startAt',
  'transaction',
  'debounce',
];

/** `start()`'s input and options, checked, as the instance to create. Throws a `TypeError` naming the bad option. */
export function parseStartRequest(
  input: unknown,
  options: WorkflowStartOptions,
  context: StartRequestContext,
): NewWorkflowInstance & { wakeAt: number } {
  checkOptions(options, START_OPTIONS, 'start() options');
  const definition = context.resolve(options.version);
  const debounce =
    options.debounce === undefined
      ? undefined
      : parseDebounceOption(options.debounce, options as Record<string, unknown>, definition.name);
  const id = options.id ?? randomUUID();
  if (typeof id !== 'string' || id.trim() === '')
    throw invalidInput(`Invalid instance id ${JSON.stringify(id)}: use a non-empty string.`);
  const json = toJsonValue(input, `The input of workflow "${definition.name}"`, 'input') ?? null;
  const now = context.now();
  const startAt = debounce
    ? now + debounce.period
    : options.startAt === undefined
      ? now
      : toEpochOption(options.startAt, 'start', 'startAt');
  const wakeAt = Math.max(startAt, now);
  const timeout =
    options.timeout === undefined
      ? definition.timeout
      : parsePositiveDuration(options.timeout, 'start() option "timeout"');
  const priority = options.priority ?? definition.priority;
  if (!Number.isInteger(priority))
    throw invalidInput(`Invalid start() option "priority": ${shownValue(priority)}. Use a whole number.`);
  for (const field of ['concurrencyKey', 'rateLimitKey'] as const) {
    const value = options[field];
    if (value !== undefined && (typeof value !== 'string' || value === ''))
      throw invalidInput(`Invalid start() option "${field}": use a non-empty string.`);
  }
  return {
    id,
    workflow: definition.name,
    version: definition.version,
    input: json,
    concurrencyKey: options.concurrencyKey ?? null,
    rateLimitKey: options.rateLimitKey ?? null,
    priority,
    deadline: timeout === null ? null : wakeAt + timeout,
    timeout,
    wakeAt,
    now,
    // The caller's trace (through a start span) goes with the instance to every execution.
    traceContext: context.traceContext(definition.name, id),
    ...(debounce ? { debounce: debounce.store } : {}),
  };
}

/** A start of an id that exists returns that instance only when the workflow and input match: else `WorkflowAlreadyStartedError`. */
export function assertSameStart(existing: WorkflowInstance, requested: NewWorkflowInstance): void {
  if (existing.workflow === requested.workflow && sameJson(existing.input, requested.input)) return;
  throw new WorkflowAlreadyStartedError(
    `Instance "${requested.id}" already exists as ${existing.workflow}@${existing.version} with ${existing.workflow !== requested.workflow ? 'another workflow' : 'another input'}. ` +
      'Use another id, or start it with the same workflow and input to get the existing instance.',
    requested.id,
  );
}
