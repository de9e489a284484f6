import type { WorkflowWrite } from './workflow-store-instances.js';

/** What a store's `transaction()` hands its body: the transaction, seen two ways. */
export interface WorkflowStoreTransaction {
  /**
   * What the workflow's `ctx.transaction()` callback gets: the driver's client (or the ORM's
   * handle) that runs this transaction. Its statements commit or roll back with the step's result.
   */
  readonly handle: unknown;
  /**
   * The lease holder's `write()` in this transaction, with the same rules (fenced by the lease
   * token, all or nothing). Resolves to `false` when the lease is gone: the body must then throw,
   * so that nothing of the transaction commits.
   */
  write(write: WorkflowWrite): Promise<boolean>;
}

/** How a store's `transaction()` runs. */
export interface WorkflowStoreTransactionOptions {
  /** The step's timeout in ms (`null`: none). A SQL store also bounds each statement by it. */
  timeout: number | null;
}
