/** Something that wants to hear when the current turn of the event loop ended. */
export interface TurnEndListener {
  turnEnded(): void;
}

/** The listeners waiting for this turn's end, in the order they asked. */
const waiting: TurnEndListener[] = [];

/**
 * Calls `listener.turnEnded()` once the current turn of the event loop ended (in the check phase,
 * as a `setImmediate()` callback would be): one timer for every listener of the turn, not one each.
 */
export function atTurnEnd(listener: TurnEndListener): void {
  if (waiting.push(listener) === 1) setImmediate(endTurn);
}

function endTurn(): void {
  for (const listener of waiting.splice(0)) listener.turnEnded();
}
