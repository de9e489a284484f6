import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';

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

  /** Whether every write queued so far landed, once they have. */
  settled(): Promise<boolean> {
    return this.chain;
  }
}
