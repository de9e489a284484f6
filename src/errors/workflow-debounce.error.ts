import { markInputError } from './workflow-input-error.js';
import { WorkflowError } from './workflow.error.js';

/**
 * A `start(..., { debounce })` that can't be debounced: a missing or empty key, a period that is not
 * longer than 0, a `maxWait` shorter than the period, or an option a debounced start can't take
 * (`id`, `startAt`). Bad input (`isWorkflowInputError()` is true): nothing was stored.
 */
export class WorkflowDebounceError extends WorkflowError {
  constructor(message: string) {
    super(message);
    markInputError(this);
  }
}
