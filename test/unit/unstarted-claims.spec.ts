import { describe, expect, it } from 'vitest';
import type { WorkflowContext } from '../../src/engine/workflow-context.js';
import { InMemoryWorkflowStore } from '../../src/memory/in-memory-workflow.store.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { createEngineParts } from './support/engine-app.js';

// An instance claimed ahead (leased, waiting for a slot) is not running yet: a cancel or terminate
// that comes meanwhile must still stop it before its first step, whether this process accepted it
// or a heartbeat read it.

const T0 = Date.UTC(2026, 0, 1);
const LEASE = 30_000;

function setup() {
  const clock = new ManualWorkflowClock(T0);
  const store = new InMemoryWorkflowStore();
  const ran: string[] = [];
  const { storage, engine } = createEngineParts({
    store,
    clock,
    workflows: {
      charge: async (ctx: WorkflowContext) => {
        await ctx.step('charge', () => void ran.push(ctx.id));
        return 'charged';
      },
    },
  });
  /** Starts `id` and claims it, as the loop claims ahead: leased, not executing. */
  const claimAhead = async (id: string) => {
    await storage.create({ id, workflow: 'charge', version: 1, input: null, deadline: null, now: clock.now() });
    const [claimed] = await engine.claims.claim(
      { owner: 'w', token: `token-${id}`, leaseUntil: clock.now() + LEASE },
      clock.now(),
      1,
    );
    expect(claimed?.instance).toMatchObject({ id, cancelRequested: false });
    return claimed!;
  };
  return { clock, store, storage, engine, ran, claimAhead };
}

describe('an instance claimed ahead, waiting for a slot', () => {
  for (const terminate of [false, true]) {
    const request = terminate ? 'terminate' : 'cancel';
    const error = terminate ? 'WorkflowTerminatedError' : 'WorkflowCancelledError';

    it(`does not run its first step after a ${request} this process accepted while it waited`, async () => {
      const { clock, storage, engine, ran, claimAhead } = setup();
      const claimed = await claimAhead('here');
      expect(await storage.requestCancel('here', { reason: 'stop', now: clock.now(), terminate })).toBe(true);
      engine.claims.cancelAccepted('here', terminate);
      await engine.execute(claimed, new AbortController().signal);
      expect(ran).toEqual([]);
      expect(await storage.get('here')).toMatchObject({ status: 'cancelled', error: { name: error, message: 'stop' } });
    });

    it(`does not run its first step after a ${request} another process made, read by a heartbeat while it waited`, async () => {
      const { clock, store, storage, engine, ran, claimAhead } = setup();
      const claimed = await claimAhead('there');
      expect(await store.requestCancel('there', { reason: 'stop', now: clock.now(), terminate })).toBe(true);
      expect(await engine.claims.renew(claimed, clock.now() + LEASE)).toBe(true);
      await engine.execute(claimed, new AbortController().signal);
      expect(ran).toEqual([]);
      expect(await storage.get('there')).toMatchObject({
        status: 'cancelled',
        error: { name: error, message: 'stop' },
      });
    });
  }
});
