import { shownValue } from '../errors/shown-value.js';
import type { OperationHost } from './execution-host.js';

/**
 * `ctx.sleep()` / `ctx.sleepUntil()`: journals the wake-up time the first time it is reached (so a
 * replay never recomputes it) and parks until then; completes once the clock has passed it.
 * `target` is only called the first time.
 */
export async function sleepUntil(host: OperationHost, name: string, target: () => number): Promise<void> {
  host.admitOperation(name, 'sleep');
  const entry = host.journalEntry(name);
  if (entry?.state === 'completed') return;
  const now = host.now();
  const wakeAt = entry?.wakeAt ?? target();
  if (host.replayOnly) return host.suspendOperation({ wakeAt: null, wait: null });
  if (wakeAt <= now) {
    host.record({
      name,
      kind: 'sleep',
      state: 'completed',
      wakeAt,
      createdAt: entry?.createdAt ?? now,
      updatedAt: now,
    });
    return;
  }
  if (!entry) host.record({ name, kind: 'sleep', state: 'waiting', wakeAt, createdAt: now, updatedAt: now });
  return host.suspendOperation({ wakeAt, wait: null });
}

/**
 * A `sleepUntil()` date as whole epoch ms (a fraction rounded up: the SQL stores keep times as
 * bigints); a `TypeError` naming the sleep for anything else, or for a time past a `Date`'s range.
 */
export function sleepTarget(date: Date | number, name: string): number {
  const ms = date instanceof Date ? date.getTime() : date;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw new TypeError(
      `Invalid date for sleepUntil "${name}": ${shownValue(date)}. Pass a Date or epoch milliseconds (within a Date's range).`,
    );
  }
  return Math.ceil(ms);
}
