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
