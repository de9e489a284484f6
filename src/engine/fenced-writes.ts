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

const LANDED = Promise.resolve(true);

/**
 * One execution's writes under its lease, in the order they were made: each waits for the one
 * before and is skipped once one failed. A write that finds the lease gone (fencing) or that the
 * store refuses ends the chain and is reported once through `onFailure`.
 */
export class FencedWrites {
  private chain: Promise<boolean> = LANDED;
  /** Writes (and transactions) queued, and how many of them settled: equal when none is in flight. */
  private queued = 0;
  private done = 0;
  /** Whether every write that settled landed (after one did not, none is sent). */
  private ok = true;

  constructor(
    private readonly storage: WorkflowStorage,
    private readonly id: string,
    private readonly token: string,
    private readonly onFailure: (failure: { leaseLost: true } | { leaseLost: false; error: unknown }) => void,
  ) {}

  /** Queues `write`; resolves to whether it landed. */
  push(write: WorkflowWrite): Promise<boolean> {
    // With nothing in flight, the write is sent now: there is no earlier one to wait for.
    const idle = this.idle;
    this.queued++;
    this.chain = idle ? this.send(write) : this.chain.then((ok) => (ok ? this.send(write) : false));
    return this.chain;
  }

  /** Whether every write queued so far landed and none is in flight (`settled()` would resolve to true). */
  get idle(): boolean {
    return this.ok && this.done === this.queued;
  }

  private async send(write: WorkflowWrite): Promise<boolean> {
    try {
      const landed = await this.storage.write(this.id, this.token, write);
      if (!landed) this.failed({ leaseLost: true });
      return landed;
    } catch (error) {
      this.failed({ leaseLost: false, error });
      return false;
    } finally {
      this.done++;
    }
  }

  private failed(failure: { leaseLost: true } | { leaseLost: false; error: unknown }): void {
    this.ok = false;
    this.onFailure(failure);
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
    this.queued++;
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
        if (!(error instanceof LeaseGone) && !((error as { cause?: unknown } | null)?.cause instanceof LeaseGone))
          throw error;
        this.failed({ leaseLost: true });
        return { landed: false };
      }
    });
    this.chain = result.then(
      (outcome) => {
        this.done++;
        return outcome.landed;
      },
      () => {
        this.done++;
        return true;
      },
    );
    return result;
  }

  /** Whether every write queued so far landed, once they have. */
  settled(): Promise<boolean> {
    return this.chain;
  }
}
