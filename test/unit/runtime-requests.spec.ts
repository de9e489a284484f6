import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WorkflowContext } from '../../src/engine/workflow-context.js';
import { InMemoryWorkflowStore } from '../../src/memory/in-memory-workflow.store.js';
import type { WorkflowRuntime } from '../../src/runtime/workflow-runtime.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { createEngineParts } from './support/engine-app.js';

// The runtime carries out a start, a signal and a cancel in one call each, and raises every
// wake-up through WorkflowWakeUps: on plain objects, with the background loop on.

const T0 = Date.UTC(2026, 0, 1);
const runtimes: WorkflowRuntime[] = [];

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.shutdown()));
});

async function setup(options: { limited?: boolean } = {}) {
  const clock = new ManualWorkflowClock(T0);
  const run = async (ctx: WorkflowContext) => ctx.waitForSignal('go', 'go', { key: ctx.id });
  const { storage, runtime, wakeUps } = createEngineParts({
    store: new InMemoryWorkflowStore(),
    clock,
    workflows: { wait: run },
    workerId: 'here',
    limited: options.limited,
    worker: { enabled: true, concurrency: 2, pollInterval: 60_000 },
  });
  const kicks: Array<string | undefined> = [];
  wakeUps.subscribe((id) => kicks.push(id));
  runtimes.push(runtime);
  await runtime.start();
  const instance = (id: string, wakeAt = T0) => ({
    id,
    workflow: 'wait',
    version: 1,
    input: null,
    deadline: null,
    wakeAt,
    now: clock.now(),
  });
  return { storage, runtime, kicks, instance };
}

describe('the runtime, for the client', () => {
  it('creates an instance due now already leased here and runs it without a claim or a wake-up', async () => {
    const { storage, runtime, kicks, instance } = await setup();
    const result = await runtime.createInstance(instance('a'));
    expect(result).toMatchObject({ created: true, instance: { id: 'a', leaseOwner: 'here', runs: 1 } });
    await vi.waitFor(async () => expect((await storage.get('a'))!.status).toBe('suspended'));
    expect(kicks).toEqual([]);
  });

  it('wakes the loop instead for a workflow with limits, and for none when the instance existed', async () => {
    const { runtime, kicks, instance } = await setup({ limited: true });
    expect((await runtime.createInstance(instance('b'))).instance.leaseToken).toBeNull();
    expect(kicks).toEqual([undefined]);
    expect((await runtime.createInstance(instance('b'))).created).toBe(false);
    expect(kicks).toEqual([undefined]);
  });

  it('neither leases nor wakes for an instance that starts later', async () => {
    const { runtime, kicks, instance } = await setup();
    const result = await runtime.createInstance(instance('later', T0 + 60_000));
    expect(result.instance.leaseToken).toBeNull();
    expect(kicks).toEqual([]);
  });

  it('wakes the loop for a signal that woke a wait, and only then', async () => {
    const { storage, runtime, kicks, instance } = await setup();
    await runtime.createInstance(instance('c'));
    await vi.waitFor(async () => expect((await storage.get('c'))!.status).toBe('suspended'));
    await runtime.signal({ name: 'go', key: 'nobody', dedupeId: null, payload: 1, now: T0 });
    expect(kicks).toEqual([]);
    await runtime.signal({ name: 'go', key: 'c', dedupeId: null, payload: 2, now: T0 });
    expect(kicks).toEqual([undefined]);
    await vi.waitFor(async () => expect(await storage.get('c')).toMatchObject({ status: 'completed', output: 2 }));
  });

  it('makes a suspended instance due with its accepted cancel, waking the loop: it ends cancelled', async () => {
    const { storage, runtime, kicks, instance } = await setup();
    await runtime.createInstance(instance('d'));
    await vi.waitFor(async () => expect((await storage.get('d'))!.status).toBe('suspended'));
    expect(await runtime.requestCancel('d', { reason: 'stop', now: T0, terminate: false })).toBe(true);
    expect(kicks.length).toBeGreaterThan(0);
    await vi.waitFor(async () => expect(await storage.get('d')).toMatchObject({ status: 'cancelled' }));
    expect(await runtime.requestCancel('d', { reason: 'again', now: T0, terminate: false })).toBe(false);
  });
});
