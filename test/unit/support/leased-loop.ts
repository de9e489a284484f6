// The leased loop of the unit specs: string items, two slots, no poll or heartbeat in the way.
import { LeasedWorker, type LeasedWorkerOptions } from '../../../src/leased-loop/leased-worker.js';
import { systemClock } from '../../../src/time/workflow-clock.js';

/** A loop over string items with the tests' defaults (two slots, no poll or heartbeat in the way), `options` over them. */
export function loopWith(
  options: Partial<LeasedWorkerOptions<string>> & Pick<LeasedWorkerOptions<string>, 'claim'>,
): LeasedWorker<string> {
  return new LeasedWorker<string>({
    concurrency: 2,
    pollInterval: 10_000,
    leaseDuration: 30_000,
    heartbeatInterval: 10_000,
    shutdownTimeout: 1_000,
    clock: systemClock,
    renew: async () => true,
    execute: async () => undefined,
    onError: () => undefined,
    ...options,
  });
}
