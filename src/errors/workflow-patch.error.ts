import { NonRetryableError } from './non-retryable.error.js';

/**
 * `ctx.patched()` or `ctx.deprecatePatch()` used where a patch can't be decided: inside a step's
 * function (which never replays, so its code can simply change), or with an invalid patch id.
 * Non-retryable: another attempt would make the same call.
 */
export class WorkflowPatchError extends NonRetryableError {}
