import { invalidInput } from '../errors/workflow-input-error.js';
/**
 * A named signal with a payload type, shared by the code that sends it
 * (`WorkflowClient.signal()`) and the workflows that wait for it (`ctx.waitForSignal()`): one
 * constant for both ends, so the name can't be misspelled on one side and the payload is
 * type-checked on both.
 *
 * @example
 * export const delivered = new WorkflowSignal<{ at: string }>('shipment.delivered');
 */
export class WorkflowSignal<T = unknown> {
  /** Type-only: the payload's type. Never set at run time. */
  declare readonly payload?: T;

  constructor(readonly name: string) {
    assertSignalName(name);
  }
}

/** Throws a `TypeError` for an empty name, or one starting with `$` (the engine's own signals). */
export function assertSignalName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw invalidInput(
      `Invalid signal name ${JSON.stringify(name)}. Use a non-empty string such as "shipment.delivered".`,
    );
  }
  if (name.startsWith('$')) {
    throw invalidInput(
      `Invalid signal name "${name}": names starting with "$" are reserved for the engine's own signals.`,
    );
  }
}

/** The name of a signal given as a `WorkflowSignal` or a string, validated. */
export function signalName(signal: WorkflowSignal<unknown> | string): string {
  const name = typeof signal === 'string' ? signal : signal?.name;
  assertSignalName(name);
  return name;
}
