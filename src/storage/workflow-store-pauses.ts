// The pauses' side of `WorkflowStore`: an operator's pause of one instance or of a whole workflow.

/** `pause()`'s request. */
export interface WorkflowPauseRequest {
  /** Shown with the instance (`pauseReason`) while it is paused; `null`: none given. */
  reason: string | null;
  now: number;
}

/** `pauseWorkflow()`'s and `resumeWorkflow()`'s target: a workflow, one version of it or (`null`) all. */
export interface WorkflowPauseTarget {
  workflow: string;
  /** `null`: every version, those deployed later included. */
  version: number | null;
}

/** A stored pause of a workflow, as `pausedWorkflows()` lists it. */
export interface WorkflowPausedWorkflow extends WorkflowPauseTarget {
  reason: string | null;
  /** When it was paused (epoch ms). */
  pausedAt: number;
}

/**
 * Pausing, on every store. A pause is a flag beside the instance's status, never a status the store
 * writes: the holder of a lease goes on writing its status and journal as before (a step that was
 * running records its result) and can't overwrite the pause, a claim passes the instance over, and
 * `resume()` clears the flag and nothing else, so what fell due meanwhile is due at once and no time
 * is added to a sleep, a backoff or a wait's timeout. Reads (`get()`, `list()`, `create()` of an
 * existing id) show an unfinished paused instance with status `paused` and its `pauseReason`; a
 * finished one shows its end (a write that ended it wins over a pause that came too late).
 */
export interface WorkflowPauseStore {
  /**
   * Sets the pause of an unfinished instance that is not paused: one conditional update. When the
   * instance is leased, the holder hears of it as of a cancel (the notice `listen()` gives a
   * cancel, and `renew()`'s `paused`), so its execution stops at its next step and hands it back.
   * Returns whether it changed anything (`false`: unknown, finished, or paused already). Atomic with
   * `claim()` (the claim's row lock): a pause lands before a claim (which then passes it over) or
   * after it (and the new holder hears of it).
   */
  pause(id: string, request: WorkflowPauseRequest): Promise<boolean>;

  /** Optional: `pause()` inside the application's transaction (`pause(id, reason, { transaction })`). */
  pauseInTransaction?(transaction: unknown, id: string, request: WorkflowPauseRequest): Promise<boolean>;

  /**
   * Clears the pause of an unfinished paused instance (and its reason), sets `updatedAt = now`;
   * its wake-up is untouched. Returns whether it changed anything (`false`: unknown, finished, or
   * not paused).
   */
  resume(id: string, now: number): Promise<boolean>;

  /** Optional: `resume()` inside the application's transaction. */
  resumeInTransaction?(transaction: unknown, id: string, now: number): Promise<boolean>;

  /**
   * Stores a pause of `target` (version `null`: every version): from when it resolves, `claim()`
   * takes no instance of it, in any process, until `resumeWorkflow()`. Checked by the claim itself,
   * in its own statement (never from a list the worker read earlier). Instances running already
   * run on. Returns whether it stored a new pause (`false`: that exact pause was stored already; the
   * first reason stays).
   */
  pauseWorkflow(target: WorkflowPauseTarget, request: WorkflowPauseRequest): Promise<boolean>;

  /** Optional: `pauseWorkflow()` inside the application's transaction. */
  pauseWorkflowInTransaction?(
    transaction: unknown,
    target: WorkflowPauseTarget,
    request: WorkflowPauseRequest,
  ): Promise<boolean>;

  /**
   * Deletes the stored pause of exactly `target` (version `null`: the pause of every version, not
   * the pauses of single versions); returns whether there was one.
   */
  resumeWorkflow(target: WorkflowPauseTarget): Promise<boolean>;

  /** Optional: `resumeWorkflow()` inside the application's transaction. */
  resumeWorkflowInTransaction?(transaction: unknown, target: WorkflowPauseTarget): Promise<boolean>;

  /** Every stored pause of a workflow, by workflow then version (every version first). */
  pausedWorkflows(): Promise<WorkflowPausedWorkflow[]>;
}

/** How a pause of every version is stored: version 0, which no workflow has (versions start at 1). */
export const EVERY_VERSION = 0;
