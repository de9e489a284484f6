// An operator's control of an execution running in another process, shared by the cross-process
// spec (remote-control.e2e.spec.ts: its API app, and the worker OS process it starts,
// fixtures/remote-control-worker.ts) and MariaDB's in-process one (mysql-remote-cancel.e2e.spec.ts):
// the workflows, and the checks that a pause, a cancel or a terminate sent from the API app reaches
// the worker through the store's notice (PostgreSQL's NOTIFY, MariaDB's cancel counter), long
// before its next heartbeat (30 s). Each step records what it did through `EFFECTS` (the effects
// table across processes, an array in one), so the checks count runs wherever they happened.
import { Inject, Injectable } from '@nestjs/common';
import { expect } from 'vitest';
import { Workflow, type WorkflowClient, type WorkflowContext } from '../../src/index.js';

/** How soon a paused execution must have handed its instance back after pause() resolved. */
export const PAUSE_BOUND = 1_000;

/** How soon a cancelled or terminated step's signal must have aborted: far below the heartbeat. */
export const CANCEL_BOUND = 3_000;

export const STEPS = 40;

/** The token of what records a step's effect (`record(instance, what)`). */
export const EFFECTS = 'remote-control:effects';

/** What a step's effect is recorded with. */
export interface StepEffects {
  record(instance: string, what: string): Promise<void>;
}

/** The effects recorded for an instance, in order: what, by which process, when (`Date.now()`). */
export type RecordedEffects = (id: string) => Promise<Array<{ step: string; pid: number; at: number }>>;

/** The worker's heartbeat is far above both bounds: only the store's notice can stop an execution in time. */
export const WORKER_OPTIONS = { leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' } as const;

/** Effects kept in this process (for a worker app in the test process itself), with their reader. */
export function memoryEffects(): { effects: StepEffects; read: RecordedEffects } {
  const all: Array<{ instance: string; step: string; pid: number; at: number }> = [];
  return {
    effects: {
      record: async (instance, step) => void all.push({ instance, step, pid: process.pid, at: Date.now() }),
    },
    read: async (id) => all.filter((e) => e.instance === id).map(({ step, pid, at }) => ({ step, pid, at })),
  };
}

@Injectable()
export class Ticks {
  constructor(@Inject(EFFECTS) private readonly effects: StepEffects) {}

  /** One step's side effect: recorded, and a tenth of a second long. */
  async tick(id: string, step: string): Promise<string> {
    await this.effects.record(id, step);
    await new Promise((resolve) => setTimeout(resolve, 100));
    return step;
  }

  /** A long side effect that stops when its signal aborts (a cancel, a terminate), recording when. */
  async hold(id: string, signal: AbortSignal): Promise<string> {
    await this.effects.record(id, 'hold');
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await this.effects.record(id, 'aborted');
    return 'stopped';
  }
}

@Workflow('remote-control.ticks')
export class TickTock {
  constructor(private readonly ticks: Ticks) {}

  async run(ctx: WorkflowContext) {
    for (let i = 0; i < STEPS; i++) await ctx.step(`tick-${i}`, () => this.ticks.tick(ctx.id, `tick-${i}`));
    return STEPS;
  }
}

@Workflow('remote-control.hold')
export class HoldThenCharge {
  constructor(private readonly ticks: Ticks) {}

  async run(ctx: WorkflowContext) {
    await ctx.step('hold', ({ signal }) => this.ticks.hold(ctx.id, signal), {
      compensate: () => this.ticks.tick(ctx.id, 'undo hold'),
    });
    await ctx.step('charge', () => this.ticks.tick(ctx.id, 'charge'));
    return 'charged';
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
 * Starts `id` from `client` (the worker runs it), pauses it once a few steps ran, and checks that it
 * is handed back within `PAUSE_BOUND`, runs nothing while paused, and once resumed completes with
 * every step run exactly once, all of them by `workerPid`.
 */
export async function pauseAndResumeRemotely(
  client: WorkflowClient,
  id: string,
  runs: RecordedEffects,
  workerPid: number,
  /** How it is paused and resumed: one instance (`pause()`), or a bulk action's page (`pauseMany()`). */
  how: 'one' | 'bulk' = 'one',
): Promise<void> {
  await client.start(TickTock, null, { id });
  await within(
    10_000,
    () => runs(id),
    (r) => r.length > 0,
    'The worker did not start the instance',
  );
  await new Promise((resolve) => setTimeout(resolve, 350));
  const paused = Date.now();
  if (how === 'one') await client.pause(id, 'operator: hold on');
  else
    expect(await client.pauseMany({ ids: [id] }, { reason: 'operator: hold on' })).toEqual({ matched: 1, changed: 1 });
  // Handed back: the lease released, the status still `paused`.
  const handedBack = await within(
    PAUSE_BOUND,
    () => client.getStatus(id, { journal: true }),
    (s) => s.status === 'paused' && s.leaseUntil === null,
    'The paused instance was not handed back in time',
  );
  expect(Date.now() - paused).toBeLessThan(PAUSE_BOUND);
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

export const cancelCases = [
  { request: 'cancel', error: 'WorkflowCancelledError', did: ['hold', 'aborted', 'undo hold'] },
  { request: 'terminate', error: 'WorkflowTerminatedError', did: ['hold', 'aborted'] },
] as const;

/** Starts `id` from `client` and resolves once the worker runs its holding step. */
export async function startHolding(client: WorkflowClient, id: string, runs: RecordedEffects): Promise<void> {
  await client.start(HoldThenCharge, null, { id });
  await within(
    10_000,
    () => runs(id),
    (r) => r.some((e) => e.step === 'hold'),
    'The worker did not start holding',
  );
}

/**
 * Sends `request` for `id` from `client` and checks that the instance ends cancelled with the
 * request's error, its step's signal aborted within `CANCEL_BOUND`, and its steps did `expected`.
 */
export async function expectStoppedSoon(
  client: WorkflowClient,
  id: string,
  { request, error, did: expected }: (typeof cancelCases)[number],
  runs: RecordedEffects,
): Promise<void> {
  const requested = Date.now();
  await client[request](id, 'operator said stop');
  const ended = await within(
    CANCEL_BOUND,
    () => client.getStatus(id),
    (s) => s.status === 'cancelled',
    `The ${request} waited for the worker's heartbeat`,
  );
  expect(ended.error).toMatchObject({ name: error, message: 'operator said stop' });
  // A terminated step's body is abandoned: it records its abort on its own time.
  const did = await within(
    CANCEL_BOUND,
    () => runs(id),
    (r) => r.some((e) => e.step === 'aborted'),
    "The running step's signal did not abort",
  );
  expect(did.find((e) => e.step === 'aborted')!.at - requested).toBeLessThan(CANCEL_BOUND);
  expect(did.map((e) => e.step)).toEqual(expected);
}
