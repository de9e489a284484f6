import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/**
 * The instance `InMemoryWorkflowStore.create()` stores for `init`: `input` as stored JSON, the
 * defaults the contract gives, `signalCursor` the last signal id, and the lease `init` starts with.
 */
export function newStoredInstance(init: NewWorkflowInstance, input: unknown, signalCursor: number): WorkflowInstance {
  return {
    id: init.id,
    workflow: init.workflow,
    version: init.version,
    status: init.lease ? 'running' : 'pending',
    input,
    output: null,
    error: null,
    customStatus: null,
    parentId: init.parentId ?? null,
    parentClose: init.parentClose ?? null,
    concurrencyKey: init.concurrencyKey ?? null,
    rateLimitKey: init.rateLimitKey ?? null,
    priority: init.priority ?? 0,
    scheduleId: init.scheduleId ?? null,
    scheduledAt: init.scheduledAt ?? null,
    deadline: init.deadline,
    timeout: init.timeout ?? null,
    wakeAt: init.wakeAt ?? init.now,
    runs: init.lease ? 1 : 0,
    signalCursor,
    leaseToken: init.lease?.token ?? null,
    leaseOwner: init.lease?.owner ?? null,
    leaseUntil: init.lease?.leaseUntil ?? null,
    cancelRequested: false,
    terminateRequested: false,
    cancelReason: null,
    traceContext: init.traceContext ? { ...init.traceContext } : null,
    createdAt: init.now,
    updatedAt: init.now,
  };
}
