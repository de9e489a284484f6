/**
 * Thrown inside an execution to unwind `run()` when it must stop: the instance was cancelled or
 * terminated, its run timeout passed, the worker shuts down, it was paused, or the lease was lost. Never stored:
 * the worker turns it into the instance's outcome.
 */
export class WorkflowInterrupt extends Error {
  constructor(
    /**
     * `ended`: the execution already ended (its `run()` settled or suspended); a stray branch must
     * not go on. `pause`: an operator paused the instance; it is handed back, as at shutdown.
     */
    readonly reason:
      | 'cancel'
      | 'terminate'
      | 'timeout'
      | 'shutdown'
      | 'pause'
      | 'lease-lost'
      | 'store-error'
      | 'journal-limit'
      | 'ended',
  ) {
    super(`Execution interrupted (${reason}).`);
    this.name = 'WorkflowInterrupt';
  }
}

export function isWorkflowInterrupt(error: unknown): error is WorkflowInterrupt {
  return error instanceof WorkflowInterrupt;
}
