import { shownValue } from '../errors/shown-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { checkOptions } from '../options/known-keys.js';
import { FINISHED_STATUSES, type WorkflowInstance } from '../storage/workflow-instance.js';
import type { WorkflowPauseRequest, WorkflowPauseTarget } from '../storage/workflow-store-pauses.js';

/** `pause()`'s and `resume()`'s options. */
export interface WorkflowPauseOptions {
  /**
   * The application's transaction (a `pg` client, a `mysql2` connection, an ORM's handle, as
   * `start()` takes it): the change commits or rolls back with the application's rows.
   */
  transaction?: unknown;
}

/** `pauseWorkflow()`'s and `resumeWorkflow()`'s options. */
export interface WorkflowPauseWorkflowOptions extends WorkflowPauseOptions {
  /** One version only. Default: every version, those deployed later included. */
  version?: number;
}

const PAUSE_OPTIONS = ['transaction'] as const;
const WORKFLOW_PAUSE_OPTIONS = ['version', 'transaction', 'reason'] as const;

/** `pause()`'s reason and options, checked, as the request to store at `now`. */
export function parsePauseRequest(
  reason: string | undefined,
  options: WorkflowPauseOptions | undefined,
  now: number,
): WorkflowPauseRequest {
  if (reason !== undefined && typeof reason !== 'string')
    throw invalidInput(`Invalid pause reason: ${shownValue(reason)}. Use a string.`);
  checkPauseOptions(options, PAUSE_OPTIONS, 'pause()');
  return { reason: reason ?? null, now };
}

/** `resume()`'s options, checked. */
export function checkResumeOptions(options: WorkflowPauseOptions | undefined): void {
  checkPauseOptions(options, PAUSE_OPTIONS, 'resume()');
}

/**
 * `pauseWorkflow()`'s or `resumeWorkflow()`'s target: `name` is the workflow's (a class was
 * resolved by the caller), `options.version` a version of it or every version.
 */
export function parsePauseTarget(
  name: unknown,
  options: (WorkflowPauseWorkflowOptions & { reason?: string }) | undefined,
  method: 'pauseWorkflow()' | 'resumeWorkflow()',
): WorkflowPauseTarget {
  if (typeof name !== 'string' || name === '')
    throw invalidInput(`Invalid workflow for ${method}: ${shownValue(name)}. Pass a @Workflow class or its name.`);
  checkPauseOptions(options, WORKFLOW_PAUSE_OPTIONS, method);
  const version = options?.version;
  if (version !== undefined && (!Number.isInteger(version) || version < 1))
    throw invalidInput(
      `Invalid version for ${method} of "${name}": ${shownValue(version)}. Use a positive integer, or leave it out for every version.`,
    );
  if (options?.reason !== undefined && typeof options.reason !== 'string')
    throw invalidInput(`Invalid pause reason: ${shownValue(options.reason)}. Use a string.`);
  return { workflow: name, version: version ?? null };
}

/**
 * Why a pause or resume changed nothing, as an error, or `null` when that is no error: a paused
 * instance paused again, or one that isn't paused resumed, changes nothing and is fine; a finished
 * one can't be paused or resumed.
 */
export function pauseRefused(current: WorkflowInstance, pause: boolean): WorkflowInvalidStateError | null {
  if (!FINISHED_STATUSES.includes(current.status)) return null;
  return new WorkflowInvalidStateError(
    `Instance "${current.id}" is ${current.status} and can't be ${pause ? 'paused' : 'resumed'}: only an unfinished instance can.`,
  );
}

function checkPauseOptions(options: object | undefined, known: readonly string[], method: string): void {
  if (options !== undefined) checkOptions(options, known, `options of ${method}`);
}
