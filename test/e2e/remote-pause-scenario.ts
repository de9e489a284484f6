// The "pause from another OS process" scenario, shared by the spec (its API app, no worker) and the
// worker process it starts (fixtures/remote-pause-worker.ts): a workflow of short steps, each
// recording its run in the test's `effects` table, so the spec counts runs across processes. The
// worker's heartbeat is 30 s, so only the store's notice (PostgreSQL's NOTIFY, MariaDB's cancel
// counter) can stop it within `BOUND`; resumed, it carries on where it stopped, and no step the
// journal recorded runs again.
import { Inject, Injectable } from '@nestjs/common';
import { expect } from 'vitest';
import { Workflow, type WorkflowClient, type WorkflowContext } from '../../src/index.js';

/** How soon the execution must have handed the instance back after pause() resolved. */
export const BOUND = 1_000;

export const STEPS = 40;

/** The token of what records a step's run (`record(instance, step)`): the effects table's insert. */
export const EFFECTS = 'remote-pause:effects';

/** What a step's run is recorded with. */
export interface StepEffects {
  record(instance: string, step: string): Promise<void>;
}

/** The worker's heartbeat is far above `BOUND`: only the store's notice can stop an execution in time. */
export const WORKER_OPTIONS = { leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' } as const;

@Injectable()
export class Ticks {
  constructor(@Inject(EFFECTS) private readonly effects: StepEffects) {}

  /** One step's side effect: recorded, and a tenth of a second long. */
  async tick(id: string, step: string): Promise<string> {
    await this.effects.record(id, step);
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

/** The runs of instance `id`'s steps that the worker process recorded: step, and the pid that ran it. */
export type RecordedRuns = (id: string) => Promise<Array<{ step: string; pid: number }>>;

/**
 * Starts `id` from `client` (another process's worker runs it), pauses it once a few steps ran, and
 * checks that it is handed back within `BOUND`, runs nothing while paused, and once resumed
 * completes with every step run exactly once, all of them by `workerPid`.
 */
export async function pauseAndResumeRemotely(
  client: WorkflowClient,
  id: string,
  runs: RecordedRuns,
  workerPid: number,
  /** How it is paused and resumed: one instance (`pause()`), or a bulk action's page (`pauseMany()`). */
  how: 'one' | 'bulk' = 'one',
): Promise<void> {
  await client.start(TickTock, null, { id });
  await within(
    10_000,
    () => runs(id),
    (r) => r.length > 0,
    'The worker process did not start the instance',
  );
  await new Promise((resolve) => setTimeout(resolve, 350));
  const paused = Date.now();
  if (how === 'one') await client.pause(id, 'operator: hold on');
  else
    expect(await client.pauseMany({ ids: [id] }, { reason: 'operator: hold on' })).toEqual({ matched: 1, changed: 1 });
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
  // Nothing runs while it is paused: the step running at the pause finished and was recorded, no other began.
  await new Promise((resolve) => setTimeout(resolve, 600));
  expect((await client.getStatus(id, { journal: true })).journal!.length).toBe(recorded);
  expect((await runs(id)).length).toBe(recorded);

  if (how === 'one') await client.resume(id);
  else expect(await client.resumeMany({ ids: [id] })).toEqual({ matched: 1, changed: 1 });
  expect(await client.handle<number>(id).result({ timeout: '20s' })).toBe(STEPS);
  const all = await runs(id);
  expect(new Set(all.map((r) => r.step)).size).toBe(STEPS);
  expect(all.length).toBe(STEPS);
  expect(new Set(all.map((r) => r.pid))).toEqual(new Set([workerPid]));
}
