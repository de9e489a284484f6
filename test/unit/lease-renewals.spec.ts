import { describe, expect, it, vi } from 'vitest';
import { LeasedWorker } from '../../src/leased-loop/leased-worker.js';
import { systemClock } from '../../src/time/workflow-clock.js';

/**
 * A loop running items `a` and `b` until the test ends, whose renewals the test answers: each call
 * is recorded, and how many of one item's were out at once.
 */
function loopHolding(heartbeatInterval: number) {
  const calls: string[] = [];
  const answers: Array<{ item: string; answer: (held: boolean) => void }> = [];
  const out = new Map<string, number>();
  let mostAtOnce = 0;
  const ends: Array<() => void> = [];
  const due = ['a', 'b'];
  const loop = new LeasedWorker<string>({
    concurrency: 2,
    pollInterval: 10_000,
    leaseDuration: 60_000,
    heartbeatInterval,
    shutdownTimeout: 1_000,
    clock: systemClock,
    claim: async (_lease, _now, limit) => due.splice(0, limit),
    idOf: (item) => item,
    renew: (item) => {
      calls.push(item);
      out.set(item, (out.get(item) ?? 0) + 1);
      mostAtOnce = Math.max(mostAtOnce, out.get(item)!);
      return new Promise<boolean>((resolve) =>
        answers.push({
          item,
          answer: (held) => {
            out.set(item, out.get(item)! - 1);
            resolve(held);
          },
        }),
      );
    },
    execute: () => new Promise<void>((resolve) => ends.push(resolve)),
    onError: () => undefined,
  });
  return {
    loop,
    calls,
    get mostAtOnce() {
      return mostAtOnce;
    },
    /** Answers the renewals of `item` that are out. */
    answer(item: string, held = true) {
      for (const pending of answers.filter((a) => a.item === item)) {
        answers.splice(answers.indexOf(pending), 1);
        pending.answer(held);
      }
    },
    async stop() {
      for (const pending of answers.splice(0)) pending.answer(true);
      const stopping = loop.shutdown();
      for (const end of ends) end();
      await stopping;
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('renewals asked for between heartbeats (a cancel notice)', () => {
  it('renews only the item named, at once; asked again while that renewal is out, renews once more after it, never beside it', async () => {
    const t = loopHolding(3_600_000);
    t.loop.start();
    await vi.waitFor(() => expect([...t.loop.active]).toEqual(['a', 'b']));
    t.loop.renewNow('a');
    t.loop.renewNow('unknown');
    expect(t.calls).toEqual(['a']);
    // That renewal may have read the flags before the second request was stored: one more follows it, for both asks.
    t.loop.renewNow('a');
    t.loop.renewNow('a');
    await settle();
    expect(t.calls).toEqual(['a']);
    t.answer('a');
    await vi.waitFor(() => expect(t.calls).toEqual(['a', 'a']));
    t.answer('a');
    await settle();
    expect(t.calls).toEqual(['a', 'a']);
    expect(t.mostAtOnce).toBe(1);
    await t.stop();
  });

  it("lets a heartbeat join a renewal that is out instead of sending a second one, and follows a heartbeat's renewal that is out", async () => {
    const t = loopHolding(25);
    t.loop.start();
    await vi.waitFor(() => expect([...t.loop.active]).toEqual(['a', 'b']));
    // The first beat's renewals, held: later beats join them.
    await vi.waitFor(() => expect(t.calls).toEqual(['a', 'b']));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(t.calls).toEqual(['a', 'b']);
    // A notice while the heartbeat's renewal of a is out: one more renewal of a once it lands, none beside it.
    t.loop.renewNow('a');
    await settle();
    expect(t.calls).toEqual(['a', 'b']);
    t.answer('a');
    await vi.waitFor(() => expect(t.calls).toEqual(['a', 'b', 'a']));
    expect(t.mostAtOnce).toBe(1);
    await t.stop();
  });
});
