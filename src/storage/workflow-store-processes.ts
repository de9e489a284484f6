// The processes' side of `WorkflowStore`: each worker process records what it declares, so an
// operator sees, per workflow version, whether a live process can still run its instances.

/** A workflow version a process declares (and claims). */
export interface WorkflowDeclaredVersion {
  workflow: string;
  version: number;
}

/** A worker process as it records itself in the store (`recordProcess()`), and as `processes()` lists it. */
export interface WorkflowProcessRecord {
  /** New at every start of a process (a random id), so two processes never share a row, whatever `worker.id` they were given. */
  id: string;
  /** Its worker id: the `leaseOwner` of what it leases. */
  owner: string;
  host: string;
  pid: number;
  /** The workflow versions its registry holds, by workflow name, then version. */
  declared: WorkflowDeclaredVersion[];
  /** When it started (epoch ms, by its clock). */
  startedAt: number;
  /** When it last recorded itself (epoch ms, by its clock). */
  seenAt: number;
}

/**
 * What the worker processes declare, on every store we ship (optional for a store of your own:
 * without it the dashboard's Versions page shows the serving process's declarations alone). Each
 * process records itself at startup and again on a slow heartbeat, and removes itself on a clean
 * shutdown; a crashed one stops beating, so its row goes stale and is passed over by `processes()`
 * and removed by the next `recordProcess()` of any process. Nothing here is a lock or a lease: a
 * row only tells an operator what was seen, and no claim reads it.
 */
export interface WorkflowProcessStore {
  /**
   * Stores `record` under its `id`, replacing the row stored there whole (an upsert: a process
   * whose row was removed as stale, after a stall longer than the staleness limit, is back at its
   * next beat instead of missing until it restarts). Then removes every row whose `seenAt` is
   * before `staleBefore`: the processes that stopped beating (crashed, killed, cut off). The two
   * parts need not be atomic; a row of its own is never removed by its own call, as the caller's
   * `staleBefore` is before its `seenAt`.
   */
  recordProcess?(record: WorkflowProcessRecord, staleBefore: number): Promise<void>;

  /**
   * Removes the row `id` (a clean shutdown); returns whether there was one. The caller sends it
   * after its last `recordProcess()` settled: one still in flight would put the row back.
   */
  removeProcess?(id: string): Promise<boolean>;

  /** The rows with `seenAt >= seenSince` (the live processes), by `startedAt`, then `id`. */
  processes?(seenSince: number): Promise<WorkflowProcessRecord[]>;
}
