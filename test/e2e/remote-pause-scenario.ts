// What the two "pause from another process" specs share (PostgreSQL's by notification, MariaDB's
// by the wake-up poll's cancel counter): a workflow of short steps, paused from the API app while
// the worker app runs it. The worker's heartbeat is 30 s in both specs, so only the store's notice
// can stop it within `BOUND`; resumed, it carries on where it stopped, and no step the journal
// recorded runs again.
import { Injectable } from '@nestjs/common';
import { expect } from 'vitest';
import { Workflow, type WorkflowClient, type WorkflowContext } from '../../src/index.js';

/** How soon the execution must have handed the instance back after pause() resolved. */
export const BOUND = 1_000;

const STEPS = 40;

/** How many times each instance's steps ran (by id, then step). */
const ran = new Map<string, Map<string, number>>();
const started = new Map<string, () => void>();

@Injectable()
export class Ticks {
  /** One step's side effect: counted, and a tenth of a second long. */
  async tick(id: string, step: string): Promise<string> {
    const counts = ran.get(id) ?? new Map<string, number>();
    ran.set(id, counts);
    counts.set(step, (counts.get(step) ?? 0) + 1);
    started.get(id)?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
    return step;
  }
}

@Workflow('remote-pause.ticks')
export class TickTock {
  constructor(private readonly ticks: Ticks) {}

  async run(ctx: WorkflowContext) {
    for (let i = 0; i < STEPS; i++) await ctx.step(`tick-${i}`, () => this.ticks.tick(ctx.id, `tick-${i}`));
    return STEPS;
  }
}

/** Waits until `check` holds (polling every 20 ms), or throws `why` after `ms`. */
async function within<T>(ms: number, read: () => Promise<T>, check: (value: T) => boolean, why: string): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > until) throw new Error(`${why} (after ${ms} ms: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Starts `id` from `client` (the worker app runs it), pauses it once a few steps ran, and checks
 * that it is handed back within `BOUND`, runs nothing while paused, and once resumed completes with
 * every step run exactly once.
 */
export async function pauseAndResumeRemotely(client: WorkflowClient, id: string): Promise<void> {
  const running = new Promise<void>((resolve) => started.set(id, resolve));
  await client.start(TickTock, null, { id });
  await running;
  await new Promise((resolve) => setTimeout(resolve, 350));
  const paused = Date.now();
  await client.pause(id, 'operator: hold on');
  // Handed back: the lease released, the status still `paused`.
  const handedBack = await within(
    BOUND,
    () => client.getStatus(id, { journal: true }),
    (s) => s.status === 'paused' && s.leaseUntil === null,
    'The paused instance was not handed back in time',
  );
  expect(Date.now() - paused).toBeLessThan(BOUND);
  expect(handedBack.pauseReason).toBe('operator: hold on');
  const recorded = handedBack.journal!.length;
  expect(recorded).toBeGreaterThan(0);
  expect(recorded).toBeLessThan(STEPS);
  // Nothing runs while it is paused.
  await new Promise((resolve) => setTimeout(resolve, 600));
  const still = await client.getStatus(id, { journal: true });
  expect(still.journal!.length).toBe(recorded);
  expect([...(ran.get(id)?.values() ?? [])].reduce((a, b) => a + b, 0)).toBe(recorded);

  await client.resume(id);
  expect(await client.handle<number>(id).result({ timeout: '20s' })).toBe(STEPS);
  const counts = ran.get(id)!;
  expect(counts.size).toBe(STEPS);
  expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([]);
}
