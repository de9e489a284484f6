/**
 * What a `WorkflowStore.listen()` notification says beyond "work may be due" (`'due'`, the same as
 * none). `'cancel'`: a cancel or terminate of the instance it names was stored. A worker running
 * that instance, or holding a claim of it not started yet, reads its flags at once (it renews that
 * lease now, instead of at its next heartbeat), so the execution stops within a round trip of the
 * request in whatever process it was made; the request may also have made the instance due (a
 * suspended one), so the listener looks for work as after any wake-up.
 *
 * Optional for a store: one that does not send it leaves the execution to hear of the request at
 * its next heartbeat. A store that learns only that some request was stored, not which (MySQL's
 * poll reads a counter), sends `'cancel'` without an id as it learns of it (a claim of this
 * process still out may have read the flags before the request: its start reads them again; no
 * one looks for work for it), then names the instances among those the listener holds
 * (`WorkflowListenOptions.held()`) whose flags show a request. A store that sends `'cancel'` sends
 * it only once the request is stored (committed, in a notification that goes out with the commit,
 * as PostgreSQL's NOTIFY does, or read after the commit, as MySQL's poll does): a renewal made when
 * it is heard must read the flags, or the execution runs on until its next heartbeat.
 */
export type WorkflowWakeUpKind = 'due' | 'cancel';

/** What `WorkflowStore.listen()` may be told about its listener. */
export interface WorkflowListenOptions {
  /**
   * Answers `false` while the listener's worker will look at all due work on its own, without a
   * wake-up (its last claim filled every slot it asked for, and it claims again as soon as one
   * frees). A store that must poll the database for wake-ups (MySQL) may skip its polls while
   * every listener answers `false`; its next poll compares with the last one it made, so what
   * became due in between still calls the listener. A store the database tells (PostgreSQL's
   * LISTEN) may ignore it. Without it, the listener always needs them.
   */
  needsWakeUps?(): boolean;

  /**
   * The ids of the instances whose leases the listener's worker holds now: those it runs and those
   * it claimed ahead. A store that cannot tell which instance a cancel or terminate named (MySQL's
   * poll sees only that a request of some leased instance was stored) reads the flags of these when
   * it learns of one, even while `needsWakeUps()` answers `false` (a busy worker is the one that
   * needs to hear it), and calls the listener with `'cancel'` for each with a request it has not
   * named under this lease yet (first with `'cancel'` and no id, for the claims still out). A store
   * that names every request (PostgreSQL) may ignore it. Without it, such a store names none.
   */
  held?(): Iterable<string>;
}
