import { isDeepStrictEqual } from 'node:util';
import type { WorkflowPayloadChange, WorkflowPayloadRewrite } from '../storage/payload-rewrite.js';
import type { WorkflowInstance, WorkflowJournalEntry } from '../storage/workflow-instance.js';

/** What `InMemoryWorkflowStore` keeps of an instance that a rewrite touches. */
interface RewritableInstance {
  instance: WorkflowInstance;
  /** Each entry's JSON text, by name. */
  journal: Map<string, string>;
}

const INSTANCE_FIELDS = ['input', 'output', 'error', 'customStatus', 'cancelReason'] as const;

/**
 * `rewritePayloads()` of the in-memory store: each payload replaced (by a copy of `to`) only while
 * it is still deeply equal to `from`; entries keep their place in the journal. Returns the count.
 */
export function rewriteInstancePayloads(
  stored: RewritableInstance | undefined,
  rewrite: WorkflowPayloadRewrite,
): number {
  if (!stored) return 0;
  let replaced = 0;
  const fields = stored.instance as unknown as Record<string, unknown>;
  for (const field of INSTANCE_FIELDS) {
    const change = rewrite[field] as WorkflowPayloadChange | undefined;
    if (change && isDeepStrictEqual(fields[field], change.from)) {
      fields[field] = structuredClone(change.to);
      replaced++;
    }
  }
  for (const change of rewrite.entries ?? []) {
    const current = stored.journal.get(change.name);
    if (current !== undefined && isDeepStrictEqual(JSON.parse(current), change.from)) {
      stored.journal.set(
        change.name,
        JSON.stringify({ ...change.to, name: change.name } satisfies WorkflowJournalEntry),
      );
      replaced++;
    }
  }
  return replaced;
}

/** Replaces a stored value in place while it is still deeply equal to `change.from`. */
export function rewriteIfUnchanged<K extends string>(
  holder: Record<K, unknown> | undefined,
  field: K,
  change: WorkflowPayloadChange,
): boolean {
  if (!holder || !isDeepStrictEqual(holder[field], change.from)) return false;
  holder[field] = structuredClone(change.to);
  return true;
}
