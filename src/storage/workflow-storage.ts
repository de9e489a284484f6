import type { WorkflowStore } from './workflow-store.js';

/**
 * The layer the engine and the client talk to: the configured store, wrapped. Payload codecs
 * (encryption) plug in here, so the store only ever sees what they encoded; until a codec is
 * configured every call passes through unchanged. Also runs the store's `init()` at startup and
 * `close()` at shutdown.
 */
export class WorkflowStorage {
  constructor(readonly store: WorkflowStore) {}

  /** Prepares the store (a SQL store migrates or checks its schema) before any worker starts. */
  async onModuleInit(): Promise<void> {
    await this.store.init?.();
  }

  /** Closes what the store opened itself (never the application's pool). */
  async onApplicationShutdown(): Promise<void> {
    await this.store.close?.();
  }
}
