const tails = new WeakMap<object, Promise<void>>();

/**
 * Runs `fn` once every call made before it on the same application transaction handle has settled:
 * the store's calls on one transaction (`start()` / `signal()` with `{ transaction }`, made together
 * with `Promise.all`, say) never interleave. Each runs in a savepoint of a fixed name, and
 * savepoints nest by time, not by call: interleaved, one call's RELEASE would end the other's
 * savepoint, and that call's failure would roll back to the first one's, undoing a start that had
 * already answered. Values that are not objects (no handle to key on) run at once.
 */
export function queueOnHandle<T>(handle: unknown, fn: () => Promise<T>): Promise<T> {
  if (handle === null || (typeof handle !== 'object' && typeof handle !== 'function')) return fn();
  const previous = tails.get(handle);
  const result = previous ? previous.then(fn) : fn();
  tails.set(
    handle,
    result.then(
      () => undefined,
      () => undefined,
    ),
  );
  return result;
}
