/**
 * The longest delay `setTimeout` takes: Node runs a longer one after 1 ms (with a warning), so a
 * `timeout: '30d'` would fail every attempt at once. A longer timeout is waited out in such spans.
 */
const MAX_TIMER = 2 ** 31 - 1;

/**
 * Runs one attempt (a step's, a compensation's) under a time bound: `fn` gets a signal of its own,
 * aborted when `parent` aborts (with its reason) or when `timeout` ms pass (with `timedOut()`'s
 * error), and the returned promise rejects with that error at the timeout. What `fn` does after
 * that is nobody's concern: the attempt has failed, and its signal tells it to stop.
 */
export async function attemptWithin<T>(
  parent: AbortSignal,
  timeout: number,
  timedOut: () => Error,
  fn: (signal: AbortSignal) => T | Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  // A listener added to a signal that already aborted never runs.
  if (parent.aborted) onAbort();
  else parent.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(() => fn(controller.signal)),
      new Promise<never>((_, reject) => {
        const arm = (left: number) => {
          timer = setTimeout(
            () => {
              if (left > MAX_TIMER) return arm(left - MAX_TIMER);
              const error = timedOut();
              controller.abort(error);
              reject(error);
            },
            Math.min(left, MAX_TIMER),
          );
        };
        arm(timeout);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onAbort);
  }
}
