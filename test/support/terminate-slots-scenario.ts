// A terminate ends an instance without running any of its code, so it must not wait for a
// concurrency slot or a rate window: an operator who terminates a suspended or pending instance of
// a key whose slot a long execution holds would otherwise see nothing happen until that execution
// ends (hours, maybe). A cancel runs compensations (user code), so it keeps waiting for a slot.
// The same scenario on every store: one execution of the key blocks in a step until the test lets
// it go, while a second drain() (another worker, as far as the store can tell) claims again.
import { expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowStore } from '../../src/index.js';
import { createTestApp, type TestApp } from './nest-test-app.js';

type Mode = 'block' | 'sleep' | 'quick';

/** The step of an instance in `block` mode waits here until the test opens the gate. */
class Gate {
  /** The instances whose step ran (or runs), in order. */
  readonly ran: string[] = [];
  /** Resolves once a blocking step runs. */
  readonly reached: Promise<void>;
  private reach!: () => void;
  private readonly opened: Promise<void>;
  open!: () => void;

  constructor() {
    this.reached = new Promise((resolve) => (this.reach = resolve));
    this.opened = new Promise((resolve) => (this.open = resolve));
  }

  async pass(id: string, block: boolean): Promise<void> {
    this.ran.push(id);
    if (!block) return;
    this.reach();
    await this.opened;
  }
}

let gate = new Gate();

async function work(ctx: WorkflowContext, mode: Mode): Promise<Mode> {
  if (mode === 'sleep') await ctx.sleep('nap', '1h');
  return ctx.step('work', async () => {
    await gate.pass(ctx.id, mode === 'block');
    return mode;
  });
}

@Workflow('slots.per-key', { concurrency: { perKey: 1 } })
class PerKey {
  run(ctx: WorkflowContext, mode: Mode): Promise<Mode> {
    return work(ctx, mode);
  }
}

@Workflow('slots.rated', { rateLimit: { perKey: { max: 2, duration: '1h' } } })
class Rated {
  run(ctx: WorkflowContext, mode: Mode): Promise<Mode> {
    return work(ctx, mode);
  }
}

export interface TerminateSlotsOptions {
  /** A store for one test (a fresh schema on a SQL server). */
  open(): Promise<WorkflowStore>;
  /** Releases what `open()` opened. */
  close(store: WorkflowStore): Promise<void>;
}

/** Registers the tests. */
export function terminateSlotsTests(options: TerminateSlotsOptions): void {
  async function scenario(body: (app: TestApp) => Promise<void>): Promise<void> {
    gate = new Gate();
    const store = await options.open();
    const app = await createTestApp([PerKey, Rated], { store });
    try {
      await body(app);
    } finally {
      gate.open();
      await app.close();
      await options.close(store);
    }
  }

  /**
   * Starts `holder`, which blocks in its step holding key `k`'s only slot; returns its drain, still
   * running (in an object: an async function that returned the promise would wait for it).
   */
  async function holdSlot(app: TestApp, holder: string): Promise<{ draining: Promise<number> }> {
    await app.client.start(PerKey, 'block', { id: holder, concurrencyKey: 'k' });
    const draining = app.worker.drain();
    await gate.reached;
    expect(await app.client.getStatus(holder)).toMatchObject({ status: 'running' });
    return { draining };
  }

  /** The holder was unaffected: still running until the gate opens, then completed in its one run. */
  async function holderCompletes(app: TestApp, holder: string, draining: Promise<number>): Promise<void> {
    expect(await app.client.getStatus(holder)).toMatchObject({ status: 'running', error: null, runs: 1 });
    gate.open();
    await draining;
    expect(await app.client.getStatus(holder)).toMatchObject({ status: 'completed', output: 'block', runs: 1 });
    expect(gate.ran.filter((id) => id === holder)).toEqual([holder]);
  }

  /** `id` ended as a terminate ends it, without running its step. */
  async function terminated(app: TestApp, id: string, reason: string): Promise<void> {
    expect(await app.client.getStatus(id)).toMatchObject({
      status: 'cancelled',
      error: { name: 'WorkflowTerminatedError', message: reason },
    });
    expect(gate.ran).not.toContain(id);
  }

  it("ends a terminated pending instance at once while another execution holds its key's only slot", async () => {
    await scenario(async (app) => {
      const { draining } = await holdSlot(app, 'holder');
      await app.client.start(PerKey, 'quick', { id: 'waiting', concurrencyKey: 'k' });
      await app.client.terminate('waiting', 'stuck');
      expect(await app.worker.drain()).toBe(1);
      await terminated(app, 'waiting', 'stuck');
      await holderCompletes(app, 'holder', draining);
    });
  });

  it("ends a terminated suspended instance at once while another execution holds its key's only slot", async () => {
    await scenario(async (app) => {
      await app.client.start(PerKey, 'sleep', { id: 'sleeper', concurrencyKey: 'k' });
      await app.worker.drain();
      expect(await app.client.getStatus('sleeper')).toMatchObject({ status: 'suspended' });
      const { draining } = await holdSlot(app, 'holder');
      await app.client.terminate('sleeper', 'no longer wanted');
      expect(await app.worker.drain()).toBe(1);
      await terminated(app, 'sleeper', 'no longer wanted');
      await holderCompletes(app, 'holder', draining);
    });
  });

  it('only the terminated instance passes over the full slot: the next one of the key still waits for the holder', async () => {
    await scenario(async (app) => {
      const { draining } = await holdSlot(app, 'holder');
      await app.client.start(PerKey, 'quick', { id: 'doomed', concurrencyKey: 'k' });
      await app.client.start(PerKey, 'quick', { id: 'next', concurrencyKey: 'k' });
      await app.client.terminate('doomed', 'stuck');
      expect(await app.worker.drain()).toBe(1);
      await terminated(app, 'doomed', 'stuck');
      expect(await app.client.getStatus('next')).toMatchObject({ status: 'pending', runs: 0 });
      await holderCompletes(app, 'holder', draining);
      expect(await app.client.getStatus('next')).toMatchObject({ status: 'completed', output: 'quick' });
    });
  });

  it('a cancel still waits for a slot (its compensations are user code), and runs once the holder ends', async () => {
    await scenario(async (app) => {
      const { draining } = await holdSlot(app, 'holder');
      await app.client.start(PerKey, 'quick', { id: 'waiting', concurrencyKey: 'k' });
      await app.client.cancel('waiting', 'changed my mind');
      expect(await app.worker.drain()).toBe(0);
      expect(await app.client.getStatus('waiting')).toMatchObject({ status: 'pending', runs: 0 });
      await holderCompletes(app, 'holder', draining);
      expect(await app.client.getStatus('waiting')).toMatchObject({
        status: 'cancelled',
        error: { name: 'WorkflowCancelledError' },
      });
    });
  });

  it("ends terminated instances while their key's rate window is full, and they take no room in it", async () => {
    await scenario(async (app) => {
      await app.client.start(Rated, 'quick', { id: 'first', rateLimitKey: 'k' });
      expect(await app.worker.drain()).toBe(1);
      // One claim left in the window: `doomed` comes first in claim order but must not take it.
      await app.client.start(Rated, 'quick', { id: 'doomed', rateLimitKey: 'k' });
      await app.client.start(Rated, 'quick', { id: 'next', rateLimitKey: 'k' });
      await app.client.terminate('doomed', 'stuck');
      expect(await app.worker.drain()).toBe(2);
      await terminated(app, 'doomed', 'stuck');
      expect(await app.client.getStatus('next')).toMatchObject({ status: 'completed', output: 'quick' });
      // The window is full now: a terminate still ends its instance, a plain start waits out the window.
      await app.client.start(Rated, 'quick', { id: 'late', rateLimitKey: 'k' });
      await app.client.start(Rated, 'quick', { id: 'after', rateLimitKey: 'k' });
      await app.client.terminate('late', 'too late');
      expect(await app.worker.drain()).toBe(1);
      await terminated(app, 'late', 'too late');
      expect(await app.client.getStatus('after')).toMatchObject({ status: 'pending', runs: 0 });
      app.clock.advance('1h');
      expect(await app.worker.drain()).toBe(1);
      expect(await app.client.getStatus('after')).toMatchObject({ status: 'completed', output: 'quick' });
    });
  });
}
