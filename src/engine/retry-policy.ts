import { shownValue } from '../errors/shown-value.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { durationOr, type Duration } from '../time/duration.js';

/** How a step (or a compensation) is retried. Backoff is durable: the instance suspends meanwhile. */
export interface WorkflowRetryOptions {
  /** Attempts in all, the first included. At least 1. Default 3. */
  attempts?: number;
  /** The wait before the second attempt. Default `'1s'`. */
  backoff?: Duration;
  /** Each later wait is the previous one times this. Default 2. */
  factor?: number;
  /** No wait is longer than this. Default `'5m'`. */
  maxBackoff?: Duration;
}

/** A retry setting: a number of attempts, `false` (one attempt, no retry) or the options. */
export type WorkflowRetry = number | false | WorkflowRetryOptions;

/** A retry setting with every default applied. */
export interface RetryPolicy {
  attempts: number;
  backoff: number;
  factor: number;
  maxBackoff: number;
}

const RETRY_KEYS = ['attempts', 'backoff', 'factor', 'maxBackoff'];

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, backoff: 1_000, factor: 2, maxBackoff: 300_000 };

/** Applies defaults to a retry setting; throws a `TypeError` naming `what` when it is invalid. */
export function resolveRetry(
  retry: WorkflowRetry | undefined,
  what: string,
  base: RetryPolicy = DEFAULT_RETRY,
): RetryPolicy {
  if (retry === undefined) return base;
  if (retry === false) return { ...base, attempts: 1 };
  if (typeof retry === 'number') return { ...base, attempts: checkAttempts(retry, what) };
  if (typeof retry !== 'object' || retry === null) {
    throw new TypeError(
      `Invalid ${what}: ${shownValue(retry)}. Use a number of attempts, false, or { attempts, backoff, factor, maxBackoff }.`,
    );
  }
  checkKnownKeys(retry, RETRY_KEYS, what);
  const factor = retry.factor ?? base.factor;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) {
    throw new TypeError(
      `Invalid ${what}.factor: ${shownValue(factor)}. Use a number of at least 1 (1 keeps the backoff constant).`,
    );
  }
  return {
    attempts: retry.attempts === undefined ? base.attempts : checkAttempts(retry.attempts, `${what}.attempts`),
    backoff: durationOr(retry.backoff, base.backoff, `${what}.backoff`),
    factor,
    maxBackoff: durationOr(retry.maxBackoff, base.maxBackoff, `${what}.maxBackoff`),
  };
}

/** The wait after failed attempt number `attempt` (1-based): `backoff * factor^(attempt-1)`, capped. */
export function backoffAfter(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.maxBackoff, Math.round(policy.backoff * policy.factor ** (attempt - 1)));
}

function checkAttempts(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new TypeError(`Invalid ${what}: ${shownValue(value)}. Use a whole number of attempts, at least 1.`);
  }
  return value;
}
