// What the two "cancel from another process" specs share (PostgreSQL's by notification, MySQL's by
// the wake-up poll's cancel counter): a workflow whose first step holds until its signal aborts,
// and the check that a cancel or terminate from the API app stops it long before the worker's
// next heartbeat (30 s in both specs).
import { Injectable } from '@nestjs/common';
import { expect } from 'vitest';
import { Workflow, type WorkflowClient, type WorkflowContext } from '../../src/index.js';

/** Far below the worker's heartbeat (30 s): only the store's notice can stop the step this soon. */
export const BOUND = 3_000;

/** What each instance's steps did (by id), and when its running step saw its signal abort. */
const did = new Map<string, string[]>();
const record = (id: string, what: string) => void did.set(id, [...(did.get(id) ?? []), what]);
const holding = new Map<string, () => void>();
const abortedAt = new Map<string, number>();

@Injectable()
export class Effects {
  /** A long side effect that stops when its signal aborts (a cancel, a terminate). */
  hold(id: string, signal: AbortSignal): Promise<string> {
    record(id, 'hold');
    holding.get(id)?.();
    return new Promise((resolve) => {
      signal.addEventListener(
        'abort',
        () => {
          abortedAt.set(id, Date.now());
          resolve('stopped');
        },
        { once: true },
      );
    });
  }
}

@Workflow('remote-cancel.hold')
export class HoldThenCharge {
  constructor(private readonly effects: Effects) {}

  async run(ctx: WorkflowContext) {
    await ctx.step('hold', ({ signal }) => this.effects.hold(ctx.id, signal), {
      compensate: () => record(ctx.id, 'undo hold'),
    });
    await ctx.step('charge', () => record(ctx.id, 'charge'));
    return 'charged';
  }
}

export const cases = [
  { request: 'cancel', error: 'WorkflowCancelledError', did: ['hold', 'undo hold'] },
  { request: 'terminate', error: 'WorkflowTerminatedError', did: ['hold'] },
] as const;

/** Starts `id` from `client` and resolves once the worker runs its holding step. */
export async function startHolding(client: WorkflowClient, id: string): Promise<void> {
  const held = new Promise<void>((resolve) => holding.set(id, resolve));
  await client.start(HoldThenCharge, null, { id });
  await held;
}

/**
 * Sends `request` for `id` from `client` and checks that the instance ends cancelled with the
 * request's error, its step's signal aborted within `BOUND`, and its steps did `expected`.
 */
export async function expectStoppedSoon(
  client: WorkflowClient,
  id: string,
  { request, error, did: expected }: (typeof cases)[number],
): Promise<void> {
  const requested = Date.now();
  await client[request](id, 'operator said stop');
  for (;;) {
    const status = await client.getStatus(id);
    if (status.status === 'cancelled') {
      expect(status.error).toMatchObject({ name: error, message: 'operator said stop' });
      break;
    }
    if (Date.now() - requested > BOUND) {
      throw new Error(
        `After ${BOUND} ms the instance is still ${status.status} (its step's signal ${abortedAt.has(id) ? 'aborted' : 'did not abort'}): the ${request} waits for the worker's heartbeat.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(abortedAt.get(id)! - requested).toBeLessThan(BOUND);
  expect(did.get(id)).toEqual(expected);
}
