/**
 * What a `WorkflowStore.listen()` notification says beyond "work may be due" (`'due'`, the same as
 * none). `'cancel'`: a cancel or terminate of the instance it names was stored. A worker running
 * that instance, or holding a claim of it not started yet, reads its flags at once (it renews that
 * lease now, instead of at its next heartbeat), so the execution stops within a round trip of the
 * request in whatever process it was made; the request may also have made the instance due (a
 * suspended one), so the listener looks for work as after any wake-up.
 *
 * Optional for a store: one that cannot tell which instance a cancel named (MySQL's poll) calls the
 * listener as for any wake-up, or not at all for a leased instance, and the execution hears of the
 * request at its next heartbeat. A store that sends `'cancel'` sends it only once the request is
 * stored (committed, in a notification that goes out with the commit, as PostgreSQL's NOTIFY does):
 * a renewal made when it is heard must read the flags, or the execution runs on until its next
 * heartbeat.
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
}
