import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';
import type { WorkflowStoreTransaction } from '../storage/workflow-store-transactions.js';

/**
 * Thrown by a transaction's write that found the lease gone, so that nothing of it commits (an
 * ORM running the transaction sees an ordinary error, rolls back and rethrows it).
 */
class LeaseGone extends Error {
  constructor() {
    super('The lease on this instance was lost: the transaction of ctx.transaction() rolls back.');
    this.name = 'LeaseGone';
  }
}

/**
 * One execution's writes under its lease, in the order they were made: each waits for the one
 * before and is skipped once one failed. A write that finds the lease gone (fencing) or that the
 * store refuses ends the chain and is reported once through `onFailure`.
 */
export class FencedWrites {
  private chain: Promise<boolean> = Promise.resolve(true);

  constructor(
    private readonly storage: WorkflowStorage,
    private readonly id: string,
    private readonly token: string,
    private readonly onFailure: (failure: { leaseLost: true } | { leaseLost: false; error: unknown }) => void,
  ) {}

  /** Queues `write`; resolves to whether it landed. */
  push(write: WorkflowWrite): Promise<boolean> {
    this.chain = this.chain.then(async (ok) => {
      if (!ok) return false;
      try {
        const landed = await this.storage.write(this.id, this.token, write);
        if (!landed) this.onFailure({ leaseLost: true });
        return landed;
      } catch (error) {
        this.onFailure({ leaseLost: false, error });
        return false;
      }
    });
    return this.chain;
  }

  /**
   * A store transaction (`ctx.transaction()`) in this order: it starts once the writes queued
   * before it landed, and writes queued after it wait for its end. `body` writes with
   * `tx.write()`, fenced like the others: one that finds the lease gone throws, so nothing of the
   * transaction commits, and is reported through `onFailure`; the result is then `landed: false`.
   * Any other failure (the workflow's callback, the database) rejects, and later writes go on.
   */
  transact<T>(
    body: (tx: WorkflowStoreTransaction) => Promise<T>,
    timeout: number | null,
  ): Promise<{ landed: true; value: T } | { landed: false }> {
    const result = this.chain.then(async (ok): Promise<{ landed: true; value: T } | { landed: false }> => {
      if (!ok) return { landed: false };
      try {
        const value = await this.storage.transaction(
          this.id,
          this.token,
          (tx) =>
            body({
              handle: tx.handle,
              write: async (write) => {
                if (!(await tx.write(write))) throw new LeaseGone();
                return true;
              },
            }),
          { timeout },
        );
        return { landed: true, value };
      } catch (error) {
        if (!(error instanceof LeaseGone) && !((error as { cause?: unknown } | null)?.cause instanceof LeaseGone)) throw error;
        this.onFailure({ leaseLost: true });
        return { landed: false };
      }
    });
    this.chain = result.then(
      (outcome) => outcome.landed,
      () => true,
    );
    return result;
  }

  /** Whether every write queued so far landed, once they have. */
  settled(): Promise<boolean> {
    return this.chain;
  }
}
