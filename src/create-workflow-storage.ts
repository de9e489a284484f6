import { InMemoryWorkflowStore } from './memory/in-memory-workflow.store.js';
import { WorkflowStorage, type WorkflowStorageOptions } from './storage/workflow-storage.js';
import type { WorkflowStore } from './storage/workflow-store.js';

/**
 * The storage layer over the configured store: `InMemoryWorkflowStore` when none is given. Refuses
 * the in-memory store under `NODE_ENV=production` unless `allowInMemoryStorage` says so, since
 * every running instance would be lost on restart.
 */
export function createWorkflowStorage(
  store: WorkflowStore | undefined,
  options: { allowInMemoryStorage: boolean } & WorkflowStorageOptions,
): WorkflowStorage {
  const chosen = store ?? new InMemoryWorkflowStore();
  if (
    chosen instanceof InMemoryWorkflowStore &&
    process.env.NODE_ENV === 'production' &&
    !options.allowInMemoryStorage
  ) {
    throw new Error(
      'WorkflowsModule is using the in-memory store with NODE_ENV=production: every running instance would be lost on restart. ' +
        'Configure a durable store (PostgresWorkflowStore from @nestjs/workflows/postgres), or set allowInMemoryStorage: true to accept that.',
    );
  }
  return new WorkflowStorage(chosen, {
    codecs: options.codecs ?? null,
    onUnreadable: options.onUnreadable,
    startup: options.startup,
  });
}
