import { WorkflowSchemaError } from '../errors/workflow-schema.error.js';

/** How startup retries a store whose first connection fails (`retryAttempts` / `retryDelay`). */
export interface StoreStartup {
  /** Attempts after the first; 0: fail at once. */
  retryAttempts: number;
  /** Milliseconds between attempts. */
  retryDelay: number;
  /** Told about each failed attempt that is tried again. */
  log?(message: string): void;
}

/**
 * Runs the store's `init()`, trying again after `retryDelay` up to `retryAttempts` times when it
 * fails, as `@nestjs/typeorm` does for its first connection: a worker started while the database
 * is still coming up waits for it instead of exiting. A schema behind the code (with `migrate:
 * false`) fails at once: waiting doesn't fix it. The last failure is the one startup reports.
 */
export async function initStore(init: () => Promise<void>, startup: StoreStartup): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await init();
      return;
    } catch (error) {
      if (attempt > startup.retryAttempts || error instanceof WorkflowSchemaError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      startup.log?.(
        `Unable to start the workflow store (attempt ${attempt} of ${startup.retryAttempts + 1}): ${reason} ` +
          `Retrying in ${startup.retryDelay} ms...`,
      );
      await new Promise((resolve) => setTimeout(resolve, startup.retryDelay));
    }
  }
}
