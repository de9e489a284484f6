import { AsyncLocalStorage } from 'node:async_hooks';
import type { WorkflowInstance } from '../storage/workflow-instance.js';

/**
 * Which execution's compensation function the current code runs in, followed through its awaits,
 * timers and `Promise.all` branches. A flag set while a compensation runs would not do: a stray
 * branch of `run()` that calls `ctx` meanwhile must keep its own behaviour (the run ended: its call
 * throws the execution's interrupt), and only the compensation's own calls are refused.
 * Made at the first compensation, and disabled whenever none runs: on Node 20 an enabled
 * `AsyncLocalStorage` costs every promise of the process a hook.
 */
let scope: AsyncLocalStorage<object> | null = null;
let running = 0;

/** Runs `fn`, the compensation function of `owner` (an execution), inside its scope. */
export async function runAsCompensation<T>(owner: object, fn: () => Promise<T>): Promise<T> {
  scope ??= new AsyncLocalStorage<object>();
  running++;
  try {
    return await scope.run(owner, fn);
  } finally {
    if (--running === 0) scope.disable();
  }
}

/**
 * Throws a `TypeError` when `owner`'s compensation function makes the call: a `ctx` operation there
 * would wait for a run that already ended, and the compensation would never finish. The check costs
 * one comparison while no compensation runs.
 */
export function assertOutsideCompensation(owner: object, instance: WorkflowInstance, name?: string): void {
  if (running === 0 || scope?.getStore() !== owner) return;
  const call = name === undefined ? 'A ctx operation' : `ctx operation "${name}"`;
  throw new TypeError(
    `${call} was called inside a compensation of instance "${instance.id}" (workflow "${instance.workflow}@${instance.version}"): ` +
      "ctx operations (step, transaction, sleep, waitForSignal, startChild, now...) can't be used inside a compensation. " +
      "Do the undo work directly in the compensation function: it is retried with the step's compensateRetry.",
  );
}
