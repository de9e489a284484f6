import { shownValue } from '../errors/shown-value.js';
import { toJsonValue } from '../engine/json-value.js';
import { invalidInput } from '../errors/workflow-input-error.js';
import { checkOptions } from '../options/known-keys.js';
import { signalName, type WorkflowSignal } from '../signals/workflow-signal.js';
import type { NewWorkflowSignal } from '../storage/workflow-store.js';

export interface WorkflowSignalOptions {
  /** Only waits with exactly this key match. */
  key?: string;
  /** The sender's id: a repeated signal with the same id is stored once. */
  id?: string;
  transaction?: unknown;
}

const SIGNAL_OPTIONS = ['key', 'id', 'transaction'];

/** `signal()`'s arguments, checked, as the signal to store. Throws a `TypeError` naming the bad option. */
export function parseSignalRequest<T>(
  signal: WorkflowSignal<T> | string,
  payload: T,
  options: WorkflowSignalOptions,
  now: () => number,
): NewWorkflowSignal {
  const name = signalName(signal);
  checkOptions(options, SIGNAL_OPTIONS, 'signal() options');
  if (options.key !== undefined && typeof options.key !== 'string')
    throw invalidInput(`Invalid signal() option "key": ${shownValue(options.key)}. Use a string.`);
  if (options.id !== undefined && (typeof options.id !== 'string' || options.id === '')) {
    throw invalidInput(`Invalid signal() option "id": ${shownValue(options.id)}. Use a non-empty string.`);
  }
  return {
    name,
    key: options.key ?? null,
    dedupeId: options.id ?? null,
    payload: toJsonValue(payload, `The payload of signal "${name}"`, 'payload') ?? null,
    now: now(),
  };
}
