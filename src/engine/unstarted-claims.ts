import type { WorkflowInstance, WorkflowJournalEntry } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import type { WorkflowLeaseFlags } from '../storage/workflow-store.js';
import type { ClaimedInstance } from './claimed-instance.js';
import { InFlight } from '../leased-loop/in-flight.js';

const NOTHING_JOURNALED: readonly WorkflowJournalEntry[] = [];

/**
 * The claims of this process whose executions have not started (the claim's answer is on its way,
 * the instance waits for a slot, its journal is being read), and the cancels and terminates
 * accepted here meanwhile. Once an execution runs, a cancel accepted in this process reaches it at
 * once (`InstanceClaims.cancelAccepted()`); before, there is no execution to tell, and the flags the
 * claim read may predate the cancel (it committed after the claim's lock was released): lost, the
 * notice would leave the execution to run steps until its first heartbeat. So a notice is counted
 * on the claim (`ClaimedInstance.cancelsSinceClaim`), and the execution reads the flags again before its
 * first step (`readAtStart()`). Notices that come while a claim is out are kept until it answers,
 * since its instances are not known yet.
 */
export class UnstartedClaims {
  private readonly waiting = new InFlight<ClaimedInstance>();
  private claims = 0;
  /** Ids of the cancels accepted or stored while a claim was out (kept while any is). */
  private readonly cancelledWhileClaiming = new InFlight<string>();
  /** A cancel of some instance, not named, was stored while a claim was out (kept while any is). */
  private someCancelledWhileClaiming = false;

  /** Runs a claim: its instances count as unstarted from its answer until `started()`. */
  async claim<T extends ClaimedInstance>(claim: () => Promise<T[]>): Promise<T[]> {
    this.claims++;
    let claimed: T[] = [];
    try {
      return (claimed = await claim());
    } finally {
      for (const item of claimed) {
        this.waiting.add(item);
        if (
          this.someCancelledWhileClaiming ||
          (this.cancelledWhileClaiming.size > 0 && this.cancelledWhileClaiming.has(item.instance.id))
        )
          countCancel(item);
      }
      if (--this.claims === 0) {
        this.cancelledWhileClaiming.takeAll();
        this.someCancelledWhileClaiming = false;
      }
    }
  }

  /** A cancel or terminate of `id` was accepted in this process (or a renewal read one). */
  cancelAccepted(id: string): void {
    for (const item of this.waiting) if (item.instance.id === id) countCancel(item);
    if (this.claims > 0) this.cancelledWhileClaiming.add(id);
  }

  /**
   * The store said a cancel or terminate of `id` was stored, in this process or another: a claim
   * still out may have read the flags before it (its answer can come after the notification), so
   * its start reads them again. The claims that answered are the worker's to renew at once.
   */
  cancelStored(id: string): void {
    if (this.claims > 0) this.cancelledWhileClaiming.add(id);
  }

  /**
   * The store said a cancel or terminate of some instance was stored, without naming it (MySQL's
   * counter): every claim still out reads the flags of what it took again at its start, as for
   * `cancelStored()`. The instances held already are the store's to name (`WorkflowListenOptions.held`).
   */
  someCancelStored(): void {
    if (this.claims > 0) this.someCancelledWhileClaiming = true;
  }

  /**
   * A renewal of `item`, not started yet, read `flags`: a request the claim did not read makes the
   * start read the flags again; `null` (the lease is gone), it never starts.
   */
  renewed(item: ClaimedInstance, flags: WorkflowLeaseFlags | null): void {
    const { instance } = item;
    if (flags === null) this.started(item);
    else if (
      (flags.terminateRequested && !instance.terminateRequested) ||
      (flags.cancelRequested && !instance.cancelRequested) ||
      flags.paused === true
    )
      countCancel(item);
  }

  /** Its execution started (it hears notices itself from now on), or it never will (its lease is gone). */
  started(item: ClaimedInstance): void {
    this.waiting.delete(item);
  }
}

function countCancel(item: ClaimedInstance): void {
  item.cancelsSinceClaim = (item.cancelsSinceClaim ?? 0) + 1;
}

/**
 * What an execution starts from: its journal, and its instance with the cancel and terminate flags
 * as they stand now (the claim's may predate a request). A rerun reads its journal, and the flags
 * come with it at no cost (the PostgreSQL store reads both in one statement). A first claim has
 * nothing journaled (a retry or a hand-back always has `runs > 1`) and skips the read, unless a
 * cancel was noticed since the claim, or it is a fork (`forkedFrom`: created with a journal). A notice that comes while the read is out may be of a request
 * committed after the read looked: the flags are read again (rare: only then). `null`: the instance
 * was deleted since the claim.
 */
export async function readAtStart(
  storage: WorkflowStorage,
  claimed: ClaimedInstance,
): Promise<{ instance: WorkflowInstance; journal: readonly WorkflowJournalEntry[]; paused: boolean } | null> {
  let { instance } = claimed;
  let journal = NOTHING_JOURNALED;
  let paused = false;
  let readJournal = instance.runs > 1 || (instance.forkedFrom !== undefined && instance.forkedFrom !== null);
  let covered = 0;
  while (readJournal || ((claimed.cancelsSinceClaim ?? 0) > covered && !instance.terminateRequested)) {
    covered = claimed.cancelsSinceClaim ?? 0;
    const details = await storage.get(instance.id, readJournal ? { journal: true } : undefined);
    if (!details) return null;
    if (readJournal) journal = details.journal ?? NOTHING_JOURNALED;
    readJournal = false;
    instance = withFlagsOf(instance, details);
    paused = details.status === 'paused';
  }
  return { instance, journal, paused };
}

/** `instance` with the cancel flags and reason `current` has (itself, unchanged, when they match). */
function withFlagsOf(instance: WorkflowInstance, current: WorkflowInstance): WorkflowInstance {
  const { cancelRequested, terminateRequested, cancelReason } = current;
  if (
    cancelRequested === instance.cancelRequested &&
    terminateRequested === instance.terminateRequested &&
    cancelReason === instance.cancelReason
  )
    return instance;
  return { ...instance, cancelRequested, terminateRequested, cancelReason };
}
