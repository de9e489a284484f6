const INPUT = Symbol.for('@nestjs/workflows:input-error');

/**
 * Marks `error` as bad input from the caller (a value JSON can't carry, a duration such as
 * '5 parsecs', a key longer than the store keeps, an invalid option...): the request was wrong and
 * nothing was changed, so a server answers it with 400, not 500. The error keeps its class
 * (`TypeError`, `RangeError`) and message.
 */
export function markInputError<E extends Error>(error: E): E {
  Object.defineProperty(error, INPUT, { value: true });
  return error;
}

/**
 * Whether `error` is bad input refused by @nestjs/workflows before anything was stored (see
 * `markInputError`), as opposed to a failure of the application or the store. The Symbol is
 * registered, so the answer holds across copies of the package (its ESM and CJS builds).
 */
export function isWorkflowInputError(error: unknown): error is Error {
  return error instanceof Error && (error as unknown as Record<symbol, unknown>)[INPUT] === true;
}

/** A `TypeError` marked as bad input (`markInputError`). */
export function invalidInput(message: string): TypeError {
  return markInputError(new TypeError(message));
}
