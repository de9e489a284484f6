import { serializeError } from '../errors/serialize-error.js';
import { WorkflowCallbackTokenError } from '../errors/workflow-callback-token.error.js';
import { CALLBACK_SIGNAL, callbackTokenHash } from '../storage/workflow-callback-storage.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { NewWorkflowSignal, WorkflowSignalResult } from '../storage/workflow-store.js';

/** What a settled callback resolves to: the instance it belonged to, and the callback's name. */
export interface WorkflowCallbackCompletion {
  id: string;
  name: string;
}

/** What settling needs besides the storage: the time, and the runtime's `signal()` (so this process wakes at once). */
export interface CallbackSettleDeps {
  now(): number;
  signal(signal: NewWorkflowSignal): Promise<WorkflowSignalResult>;
}

const REASONS = {
  unknown: 'no callback has it (a mistyped token, or its instance was deleted or purged)',
  used: 'its callback was completed, failed or timed out already (a token is usable once)',
  expired: "its callback's timeout passed",
} as const;

/**
 * `completeCallback()` / `failCallback()`: the callback's one conditional update (so of two
 * completions, or a completion and the timeout, exactly one lands), then the `$callback` signal
 * that wakes the instance (deduplicated by the token's hash: a retry after a crash sends it once).
 */
export async function settleCallback(
  storage: WorkflowStorage,
  deps: CallbackSettleDeps,
  token: unknown,
  settled: { state: 'completed'; payload: unknown } | { state: 'failed'; error: unknown },
): Promise<WorkflowCallbackCompletion> {
  if (typeof token !== 'string' || token === '' || token.length > 512) {
    throw new TypeError('The callback token must be the non-empty string ctx.createCallback() returned.');
  }
  const payload =
    settled.state === 'completed'
      ? (settled.payload ?? null)
      : serializeError(settled.error instanceof Error ? settled.error : new Error(String(settled.error)));
  // Checked before anything is stored: a value JSON can't carry is the caller's error.
  JSON.stringify(payload);
  const tokenHash = callbackTokenHash(token);
  const now = deps.now();
  const result = await storage.callbacks.settle({ tokenHash, state: settled.state, payload, now });
  if (result.outcome !== 'settled') {
    throw new WorkflowCallbackTokenError(
      `The callback token can't be used: ${REASONS[result.outcome]}. Nothing was stored.`,
      result.outcome,
    );
  }
  await deps.signal({ name: CALLBACK_SIGNAL, key: tokenHash, dedupeId: tokenHash, payload: null, now });
  return { id: result.id, name: result.name };
}
