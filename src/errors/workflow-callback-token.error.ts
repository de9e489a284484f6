import { WorkflowError } from './workflow.error.js';

/**
 * `completeCallback()` or `failCallback()` with a token that can't settle a callback: `reason` says
 * why (`'unknown'`: no callback has it, or its instance was deleted; `'used'`: it was completed,
 * failed or timed out already; `'expired'`: its timeout passed). Nothing was stored.
 */
export class WorkflowCallbackTokenError extends WorkflowError {
  constructor(
    message: string,
    readonly reason: 'unknown' | 'used' | 'expired',
  ) {
    super(message);
  }
}
