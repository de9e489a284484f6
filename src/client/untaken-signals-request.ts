import { invalidInput } from '../errors/workflow-input-error.js';
import { shownValue } from '../errors/shown-value.js';
import { checkOptions } from '../options/known-keys.js';
import type { WorkflowUntakenSignalQuery } from '../storage/workflow-store-signals.js';

/** `untakenSignals()`'s options as the store's query: `limit` from 1 to 1000, 50 by default. */
export function parseUntakenSignalsRequest(options: { limit?: number }): WorkflowUntakenSignalQuery {
  checkOptions(options, ['limit'], 'untakenSignals() options');
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw invalidInput(
      `Invalid untakenSignals() option "limit": ${shownValue(limit)}. Use a whole number from 1 to 1000.`,
    );
  return { limit };
}
