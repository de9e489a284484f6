import { InFlight } from '../leased-loop/in-flight.js';

/** An execution whose recorded entries wait to be written once the current turn of the event loop ended. */
export interface DeferredFlush {
  flushDeferred(): void;
}

/** The executions whose flush waits for this turn's end, in the order they asked. */
const waiting = new InFlight<DeferredFlush>();
let scheduled = false;

/**
 * Calls `target.flushDeferred()` once the current turn of the event loop ended (in the check phase,
 * as a `setImmediate()` callback would be): one timer for every flush of the turn, not one each.
 */
export function deferFlush(target: DeferredFlush): void {
  waiting.add(target);
  if (scheduled) return;
  scheduled = true;
  setImmediate(endTurn);
}

/**
 * `target` no longer needs its flush. A turn can be long (a `drain()` of the in-memory store runs
 * every instance in one turn, on promises alone): what is done must not stay referenced until it ends.
 */
export function cancelDeferredFlush(target: DeferredFlush): void {
  waiting.delete(target);
}

function endTurn(): void {
  scheduled = false;
  for (const target of waiting.takeAll()) target.flushDeferred();
}
