import { WorkflowDebounceError } from '../errors/workflow-debounce.error.js';
import { shownValue } from '../errors/shown-value.js';
import { checkOptions } from '../options/known-keys.js';
import type { NewInstanceDebounce } from '../storage/workflow-store.js';
import { parseDuration, type Duration } from '../time/duration.js';

/**
 * `start()`'s `debounce` option: starts with one `key` (per workflow) within `period` of each other
 * make one instance, which runs `period` after the last of them (or `maxWait` after the first, when
 * that comes sooner) with the last one's input.
 */
export interface WorkflowDebounceOptions {
  /** Names the burst, with the workflow's name: at most 255 characters. */
  key: string;
  /** How long after the latest start the instance runs (e.g. `'5s'`, `'1h'`, `'7d'`); longer than 0. */
  period: Duration;
  /** The longest the burst's first start may be put off; at least `period`. Default: no bound. */
  maxWait?: Duration;
}

/** The options a debounced start can't take: the debounce picks the instance and its start time. */
const REFUSED = ['id', 'startAt'] as const;

/**
 * Checks `debounce` against the other start options and returns its period in ms with what the store
 * gets. Throws `WorkflowDebounceError` naming what is wrong and how to fix it.
 */
export function parseDebounceOption(
  debounce: unknown,
  others: Record<string, unknown>,
  workflow: string,
): { period: number; store: NewInstanceDebounce } {
  const what = `start() option "debounce" of workflow "${workflow}"`;
  try {
    checkOptions(debounce, ['key', 'period', 'maxWait'], what);
  } catch (error) {
    throw new WorkflowDebounceError((error as Error).message);
  }
  const { key, period, maxWait } = debounce as WorkflowDebounceOptions;
  if (typeof key !== 'string' || key === '')
    throw new WorkflowDebounceError(`Invalid ${what}: "key" must be a non-empty string, got ${shownValue(key)}.`);
  for (const option of REFUSED) {
    if (others[option] !== undefined)
      throw new WorkflowDebounceError(
        `Invalid start() options of workflow "${workflow}": "debounce" can't be combined with "${option}" ` +
          `(the debounce picks the instance and when it starts). Leave "${option}" out, or start without "debounce".`,
      );
  }
  if (period === undefined)
    throw new WorkflowDebounceError(`Invalid ${what}: "period" is required (a duration such as '5s').`);
  const periodMs = duration(period, `${what} "period"`);
  if (periodMs <= 0)
    throw new WorkflowDebounceError(
      `Invalid ${what}: "period" ${shownValue(period)} must be longer than 0 (a duration such as '5s').`,
    );
  let maxWaitMs: number | null = null;
  if (maxWait !== undefined) {
    maxWaitMs = duration(maxWait, `${what} "maxWait"`);
    if (maxWaitMs < periodMs)
      throw new WorkflowDebounceError(
        `Invalid ${what}: "maxWait" ${shownValue(maxWait)} is shorter than "period" ${shownValue(period)}. ` +
          'Give a maxWait of at least the period, or leave it out for no bound.',
      );
  }
  return { period: periodMs, store: { key, maxWait: maxWaitMs } };
}

function duration(value: Duration, what: string): number {
  try {
    return parseDuration(value, what);
  } catch (error) {
    throw new WorkflowDebounceError((error as Error).message);
  }
}
