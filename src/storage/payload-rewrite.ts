import type { SerializedWorkflowError } from '../errors/serialized-workflow-error.js';
import type { WorkflowJournalEntry } from './workflow-instance.js';

/** One stored payload to replace: `to`, only while the store still holds `from` (as a read returned it). */
export interface WorkflowPayloadChange<T = unknown> {
  from: T;
  to: T;
}

/**
 * What `WorkflowStore.rewritePayloads()` replaces on one instance (re-encryption under a new key).
 * Each field is optional and checked on its own.
 */
export interface WorkflowPayloadRewrite {
  input?: WorkflowPayloadChange;
  output?: WorkflowPayloadChange;
  error?: WorkflowPayloadChange<SerializedWorkflowError | null>;
  customStatus?: WorkflowPayloadChange;
  cancelReason?: WorkflowPayloadChange<string | null>;
  /** Journal entries, each by name: `from` is the whole entry as read, `to` the whole entry to store. */
  entries?: Array<{ name: string } & WorkflowPayloadChange<WorkflowJournalEntry>>;
}

/** `WorkflowStore.listSignals()`'s page: signals with `id > afterId`, lowest id first, at most `limit`. */
export interface WorkflowSignalPageQuery {
  afterId: number;
  limit: number;
}
