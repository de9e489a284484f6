import type { SerializedWorkflowError } from './serialized-workflow-error.js';
import { NonRetryableError } from './non-retryable.error.js';
import { UnknownWorkflowError } from './unknown-workflow.error.js';
import { WorkflowAlreadyStartedError } from './workflow-already-started.error.js';
import { WorkflowCancelledError } from './workflow-cancelled.error.js';
import { WorkflowChildFailedError } from './workflow-child-failed.error.js';
import { WorkflowInvalidStateError } from './workflow-invalid-state.error.js';
import { WorkflowJournalLimitError } from './workflow-journal-limit.error.js';
import { WorkflowNonDeterminismError } from './workflow-non-determinism.error.js';
import { WorkflowNotFoundError } from './workflow-not-found.error.js';
import { WorkflowSchemaError } from './workflow-schema.error.js';
import { WorkflowSignalTimeoutError } from './workflow-signal-timeout.error.js';
import { WorkflowTerminatedError } from './workflow-terminated.error.js';
import { WorkflowTimeoutError } from './workflow-timeout.error.js';
import { WorkflowError } from './workflow.error.js';

const MAX_CAUSE_DEPTH = 5;

/**
 * `text` with each lone surrogate and each NUL character made U+FFFD (`String.prototype.toWellFormed()`,
 * Node 20): a message cut in the middle of an emoji, or quoting bytes with a NUL, must still be
 * storable, or the failure could never be recorded (no store keeps either).
 */
function wellFormed(text: string): string {
  const wellFormedText = (text as string & { toWellFormed(): string }).toWellFormed();
  return wellFormedText.includes('\u0000') ? wellFormedText.replaceAll('\u0000', '\ufffd') : wellFormedText;
}

/** Turns anything thrown into the plain JSON the store keeps: `{ name, message, stack?, cause? }` plus own fields. */
export function serializeError(error: unknown, depth = 0): SerializedWorkflowError {
  if (!(error instanceof Error)) {
    return { name: 'Error', message: wellFormed(typeof error === 'string' ? error : safeString(error)) };
  }
  const out: SerializedWorkflowError = {
    name: wellFormed(String(error.name)),
    message: wellFormed(String(error.message)),
  };
  if (error.stack) out.stack = wellFormed(error.stack);
  for (const [field, value] of Object.entries(error)) {
    if (field === 'name' || field === 'message' || field === 'stack' || field === 'cause') continue;
    if (typeof value === 'string') out[field] = wellFormed(value);
    else if (isJsonSafe(value)) out[field] = value;
  }
  if (error.cause !== undefined && depth < MAX_CAUSE_DEPTH) out.cause = serializeError(error.cause, depth + 1);
  return out;
}

const KNOWN: Record<string, new (message: string) => Error> = {
  WorkflowError,
  WorkflowNotFoundError,
  UnknownWorkflowError,
  WorkflowNonDeterminismError,
  WorkflowCancelledError,
  WorkflowTerminatedError,
  WorkflowTimeoutError,
  WorkflowSignalTimeoutError,
  WorkflowJournalLimitError,
  WorkflowSchemaError,
  WorkflowInvalidStateError,
  NonRetryableError,
};

/**
 * Turns a stored error back into an `Error`: the engine's own class where it owns one (so
 * `instanceof WorkflowSignalTimeoutError` holds on replay), else an `Error` with the stored name.
 */
export function deserializeError(stored: SerializedWorkflowError): Error {
  let error: Error;
  if (stored.name === 'WorkflowChildFailedError') {
    error = new WorkflowChildFailedError(
      stored.message,
      String(stored.childId ?? ''),
      (stored.childError as SerializedWorkflowError | null) ?? null,
    );
  } else if (stored.name === 'WorkflowAlreadyStartedError') {
    error = new WorkflowAlreadyStartedError(stored.message, String(stored.instanceId ?? ''));
  } else {
    const Known = KNOWN[stored.name];
    error = Known ? new Known(stored.message) : new Error(stored.message);
    error.name = stored.name;
  }
  for (const [field, value] of Object.entries(stored)) {
    if (field === 'name' || field === 'message' || field === 'stack' || field === 'cause') continue;
    (error as unknown as Record<string, unknown>)[field] = value;
  }
  if (stored.stack) error.stack = stored.stack;
  if (stored.cause) (error as Error & { cause?: unknown }).cause = deserializeError(stored.cause);
  return error;
}

function isJsonSafe(value: unknown): boolean {
  try {
    if (value === null || ['number', 'boolean'].includes(typeof value)) return true;
    // Left out when it holds a lone surrogate (JSON.stringify() escapes only those as \\udXXX) or a NUL, which no store keeps.
    const text = JSON.stringify(value) as string | undefined;
    return text !== undefined && !/(?<!\\)(?:\\\\)*\\u(?:d[89a-f]|0000)/.test(text);
  } catch {
    return false;
  }
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
