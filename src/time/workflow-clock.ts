/** The engine's source of time (epoch milliseconds). Every timer, lease and `ctx.now()` reads it. */
export interface WorkflowClock {
  now(): number;
}

/** The real time. */
export const systemClock: WorkflowClock = { now: () => Date.now() };

/**
 * A clock that can tell listeners it jumped (a `ManualWorkflowClock`), so a background worker
 * looks for work that became due at once instead of at its next poll.
 */
export interface ObservableWorkflowClock extends WorkflowClock {
  onAdvance(listener: () => void): () => void;
}

export function isObservableClock(clock: WorkflowClock): clock is ObservableWorkflowClock {
  return typeof (clock as Partial<ObservableWorkflowClock>).onAdvance === 'function';
}
