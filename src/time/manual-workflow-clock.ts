import { parseDuration, type Duration } from './duration.js';
import type { ObservableWorkflowClock } from './workflow-clock.js';

/**
 * A clock that moves only when told, for tests: `advance('10m')` then `worker.drain()` runs what
 * became due, with no real waiting. Advancing also wakes an enabled background worker at once.
 */
export class ManualWorkflowClock implements ObservableWorkflowClock {
  private current: number;
  private readonly listeners = new Set<() => void>();

  /** Starts at `start` (default: the real time now). */
  constructor(start?: Date | number) {
    this.current = start === undefined ? Date.now() : toMs(start, 'ManualWorkflowClock start');
  }

  now(): number {
    return this.current;
  }

  /** Moves the clock forward by `duration`; returns the new time. */
  advance(duration: Duration): number {
    this.current += parseDuration(duration, 'ManualWorkflowClock.advance() duration');
    this.notify();
    return this.current;
  }

  /** Sets the clock to `time` (forward or back). */
  set(time: Date | number): void {
    this.current = toMs(time, 'ManualWorkflowClock.set() time');
    this.notify();
  }

  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}

function toMs(time: Date | number, what: string): number {
  const ms = time instanceof Date ? time.getTime() : time;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new TypeError(`Invalid ${what}: ${String(time)}. Pass a Date or epoch milliseconds.`);
  }
  return ms;
}
