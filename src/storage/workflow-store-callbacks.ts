/**
 * The callbacks' part of the store contract (`ctx.createCallback()`, `client.completeCallback()`):
 * one row per instance and callback name, found by the SHA-256 of its token (the store never holds
 * a usable token). Its `state` is the one truth of how it ended: a completion, a failure and the
 * timeout each change it only from `open`, in one conditional update, so of any two exactly one
 * lands. Optional, so a store of your own keeps working without it; every store we ship has it.
 */
export interface WorkflowCallbackStore {
  /**
   * Stores the callback `open`, or, when the instance has it `open` already (an execution that made
   * a token and crashed before journaling it: that token was never handed out), replaces its token
   * hash and expiry. A callback no longer open is left as it is. Resolves to `false`, storing
   * nothing, when the instance does not exist; a delete or purge of the instance takes its callbacks.
   */
  createCallback?(callback: NewWorkflowCallback): Promise<boolean>;

  /** The instance's callback `name`, or `null`. */
  getCallback?(id: string, name: string): Promise<WorkflowCallbackRecord | null>;

  /**
   * Completes or fails the callback whose token hash is `tokenHash`, only while it is `open` and not
   * expired (`expiresAt` null or after `now`): sets `state`, `payload` and `settledAt`. Resolves to
   * `settled` with the instance and name, or why not: `unknown` (no such hash), `used` (settled or
   * expired before: a second completion of one token loses to the first), `expired` (its time
   * passed, even if the timeout was not recorded yet: the timeout wins from `expiresAt` on).
   */
  settleCallback?(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult>;

  /**
   * The timeout: sets the callback `expired` (and `settledAt`) only while it is `open`; resolves to
   * whether it did. `false`: a completion or failure landed first, and stands.
   */
  expireCallback?(id: string, name: string, now: number): Promise<boolean>;
}

/** What `createCallback()` takes. */
export interface NewWorkflowCallback {
  id: string;
  name: string;
  /** The SHA-256 of the token, hex. */
  tokenHash: string;
  /** When it expires (epoch ms), or `null`: never. */
  expiresAt: number | null;
  now: number;
}

/** How a callback stands. */
export type WorkflowCallbackState = 'open' | 'completed' | 'failed' | 'expired';

/** A stored callback. */
export interface WorkflowCallbackRecord {
  id: string;
  name: string;
  state: WorkflowCallbackState;
  /** The completion's payload, or the failure's error (`{ name, message }`); `null` while open or expired. */
  payload: unknown;
  expiresAt: number | null;
  createdAt: number;
  settledAt: number | null;
}

/** What `settleCallback()` takes. */
export interface WorkflowCallbackSettle {
  tokenHash: string;
  state: 'completed' | 'failed';
  /** A JSON value (encoded by the codec when one is configured). */
  payload: unknown;
  now: number;
}

/** What `settleCallback()` resolves to. */
export type WorkflowCallbackSettleResult =
  { outcome: 'settled'; id: string; name: string } | { outcome: 'unknown' | 'used' | 'expired' };
