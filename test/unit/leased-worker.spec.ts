import { describe, expect, it } from 'vitest';
import { LeasedWorker } from '../../src/worker/leased-worker.js';
import { systemClock } from '../../src/time/workflow-clock.js';

function worker(claim: (limit: number) => Promise<string[]>, execute: (item: string) => Promise<void> = async () => undefined, pollInterval = 40) {
  const errors: unknown[] = [];
  const loop = new LeasedWorker<string>({
    concurrency: 2,
    pollInterval,
    leaseDuration: 30_000,
    heartbeatInterval: 10_000,
    shutdownTimeout: 1_000,
    clock: systemClock,
    claim: (_lease, _now, limit) => claim(limit),
    renew: async () => true,
    execute,
    onError: (error) => errors.push(error),
  });
  return { loop, errors };
}

describe('the leased loop', () => {
  it('retries a failing claim at the poll interval, not in a tight loop', async () => {
    let claims = 0;
    const { loop, errors } = worker(async () => {
      claims++;
      throw new Error('database down');
    });
    loop.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await loop.shutdown();
    expect(claims).toBeGreaterThanOrEqual(2);
    expect(claims).toBeLessThanOrEqual(7);
    expect(errors.length).toBe(claims);
  });

  it('claims again at once after a full claim, and only when a slot is free', async () => {
    const due = ['a', 'b', 'c', 'd', 'e'];
    const limits: number[] = [];
    const ran: string[] = [];
    const { loop } = worker(
      async (limit) => {
        limits.push(limit);
        return due.splice(0, limit);
      },
      async (item) => {
        ran.push(item);
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
      10_000,
    );
    loop.start();
    await new Promise((resolve) => setTimeout(resolve, 60));
    await loop.shutdown();
    expect(ran).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Never more than the free slots; about one claim per freed slot while the backlog lasts, then
    // one that finds it empty; no poll came in between (its interval is 10 s).
    expect(limits[0]).toBe(2);
    expect(limits.every((limit) => limit >= 1 && limit <= 2)).toBe(true);
    expect(limits.length).toBeLessThanOrEqual(6);
  });

  it('shuts down twice safely, and drain() runs what is due without the loop', async () => {
    const due = ['x', 'y', 'z'];
    const ran: string[] = [];
    const { loop } = worker(async (limit) => due.splice(0, limit), async (item) => void ran.push(item));
    expect(await loop.drain()).toBe(3);
    expect(ran).toEqual(['x', 'y', 'z']);
    await Promise.all([loop.shutdown(), loop.shutdown()]);
    due.push('after');
    expect(await loop.drain()).toBe(0);
    expect(ran).toEqual(['x', 'y', 'z']);
  });
});
