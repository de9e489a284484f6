import { InFlight } from '../leased-loop/in-flight.js';

/** Something that wants to hear when the current turn of the event loop ended. */
export interface TurnEndListener {
  turnEnded(): void;
}

/** The listeners waiting for this turn's end, in the order they asked. */
const waiting = new InFlight<TurnEndListener>();
let scheduled = false;

/**
 * Calls `listener.turnEnded()` once the current turn of the event loop ended (in the check phase,
 * as a `setImmediate()` callback would be): one timer for every listener of the turn, not one each.
 */
export function atTurnEnd(listener: TurnEndListener): void {
  waiting.add(listener);
  if (scheduled) return;
  scheduled = true;
  setImmediate(endTurn);
}

/**
 * `listener` no longer wants to hear it. A turn can be long (a `drain()` of the in-memory store runs
 * every instance in one turn, on promises alone): what is done must not stay referenced until it ends.
 */
export function leaveTurnEnd(listener: TurnEndListener): void {
  waiting.delete(listener);
}

function endTurn(): void {
  scheduled = false;
  for (const listener of waiting.takeAll()) listener.turnEnded();
}
