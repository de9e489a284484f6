import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { runWorkflowName, testScope, type TestScope } from '../store-fixtures.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

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

@Workflow(runWorkflowName('slots.per-key'), { concurrency: { perKey: 1 } })
class PerKey {
  run(ctx: WorkflowContext, mode: Mode): Promise<Mode> {
    return work(ctx, mode);
  }
}

@Workflow(runWorkflowName('slots.rated'), { rateLimit: { perKey: { max: 2, duration: '1h' } } })
class Rated {
  run(ctx: WorkflowContext, mode: Mode): Promise<Mode> {
    return work(ctx, mode);
  }
}

/**
 * A terminate ends an instance without running any of its code, so it must not wait for a
 * concurrency slot or a rate window: an operator who terminates a suspended or pending instance of
 * a key whose slot a long execution holds would otherwise see nothing happen until that execution
 * ends (hours, maybe). A cancel runs compensations (user code), so it keeps waiting for a slot. One
 * execution of the key blocks in a step until the test lets it go, while a second `drain()`
 * (another worker, as far as the store can tell) claims again.
 */
export function terminateSlotsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('a terminate does not wait for a concurrency slot or a rate window', () => {
    const engines = contractEngines(suite);

    /** The test's engine and its own ids and key (`s.id('k')`), with a new gate that opens at the test's end. */
    function scenario(): { engine: ContractEngine; s: TestScope; key: string } {
      gate = new Gate();
      const opened = gate;
      const engine = engines.open({ workflows: [PerKey, Rated] });
      engines.onEnd(() => opened.open());
      const s = testScope();
      return { engine, s, key: s.id('k') };
    }

    /**
     * Starts `holder`, which blocks in its step holding `key`'s only slot; returns its drain, still
     * running (in an object: an async function that returned the promise would wait for it).
     */
    async function holdSlot(
      engine: ContractEngine,
      holder: string,
      key: string,
    ): Promise<{ draining: Promise<number> }> {
      await engine.client.start(PerKey, 'block', { id: holder, concurrencyKey: key });
      const draining = engine.drain();
      await gate.reached;
      expect(await engine.client.getStatus(holder)).toMatchObject({ status: 'running' });
      return { draining };
    }

    /** The holder was unaffected: still running until the gate opens, then completed in its one run. */
    async function holderCompletes(engine: ContractEngine, holder: string, draining: Promise<number>): Promise<void> {
      expect(await engine.client.getStatus(holder)).toMatchObject({ status: 'running', error: null, runs: 1 });
      gate.open();
      await draining;
      expect(await engine.client.getStatus(holder)).toMatchObject({ status: 'completed', output: 'block', runs: 1 });
      expect(gate.ran.filter((id) => id === holder)).toEqual([holder]);
    }

    /** `id` ended as a terminate ends it, without running its step. */
    async function terminated(engine: ContractEngine, id: string, reason: string): Promise<void> {
      expect(await engine.client.getStatus(id)).toMatchObject({
        status: 'cancelled',
        error: { name: 'WorkflowTerminatedError', message: reason },
      });
      expect(gate.ran).not.toContain(id);
    }

    it("ends a terminated pending instance at once while another execution holds its key's only slot", async () => {
      const { engine, s, key } = scenario();
      const { client } = engine;
      const { draining } = await holdSlot(engine, s.id('holder'), key);
      await client.start(PerKey, 'quick', { id: s.id('waiting'), concurrencyKey: key });
      await client.terminate(s.id('waiting'), 'stuck');
      expect(await engine.drain()).toBe(1);
      await terminated(engine, s.id('waiting'), 'stuck');
      await holderCompletes(engine, s.id('holder'), draining);
    });

    it("ends a terminated suspended instance at once while another execution holds its key's only slot", async () => {
      const { engine, s, key } = scenario();
      const { client } = engine;
      await client.start(PerKey, 'sleep', { id: s.id('sleeper'), concurrencyKey: key });
      await engine.drain();
      expect(await client.getStatus(s.id('sleeper'))).toMatchObject({ status: 'suspended' });
      const { draining } = await holdSlot(engine, s.id('holder'), key);
      await client.terminate(s.id('sleeper'), 'no longer wanted');
      expect(await engine.drain()).toBe(1);
      await terminated(engine, s.id('sleeper'), 'no longer wanted');
      await holderCompletes(engine, s.id('holder'), draining);
    });

    it('only the terminated instance passes over the full slot: the next one of the key still waits for the holder', async () => {
      const { engine, s, key } = scenario();
      const { client } = engine;
      const { draining } = await holdSlot(engine, s.id('holder'), key);
      await client.start(PerKey, 'quick', { id: s.id('doomed'), concurrencyKey: key });
      await client.start(PerKey, 'quick', { id: s.id('next'), concurrencyKey: key });
      await client.terminate(s.id('doomed'), 'stuck');
      expect(await engine.drain()).toBe(1);
      await terminated(engine, s.id('doomed'), 'stuck');
      expect(await client.getStatus(s.id('next'))).toMatchObject({ status: 'pending', runs: 0 });
      await holderCompletes(engine, s.id('holder'), draining);
      expect(await client.getStatus(s.id('next'))).toMatchObject({ status: 'completed', output: 'quick' });
    });

    it('a cancel still waits for a slot (its compensations are user code), and runs once the holder ends', async () => {
      const { engine, s, key } = scenario();
      const { client } = engine;
      const { draining } = await holdSlot(engine, s.id('holder'), key);
      await client.start(PerKey, 'quick', { id: s.id('waiting'), concurrencyKey: key });
      await client.cancel(s.id('waiting'), 'changed my mind');
      expect(await engine.drain()).toBe(0);
      expect(await client.getStatus(s.id('waiting'))).toMatchObject({ status: 'pending', runs: 0 });
      await holderCompletes(engine, s.id('holder'), draining);
      expect(await client.getStatus(s.id('waiting'))).toMatchObject({
        status: 'cancelled',
        error: { name: 'WorkflowCancelledError' },
      });
    });

    it("ends terminated instances while their key's rate window is full, and they take no room in it", async () => {
      const { engine, s, key } = scenario();
      const { client } = engine;
      await client.start(Rated, 'quick', { id: s.id('first'), rateLimitKey: key });
      expect(await engine.drain()).toBe(1);
      // One claim left in the window: `doomed` comes first in claim order but must not take it.
      await client.start(Rated, 'quick', { id: s.id('doomed'), rateLimitKey: key });
      await client.start(Rated, 'quick', { id: s.id('next'), rateLimitKey: key });
      await client.terminate(s.id('doomed'), 'stuck');
      expect(await engine.drain()).toBe(2);
      await terminated(engine, s.id('doomed'), 'stuck');
      expect(await client.getStatus(s.id('next'))).toMatchObject({ status: 'completed', output: 'quick' });
      // The window is full now: a terminate still ends its instance, a plain start waits out the window.
      await client.start(Rated, 'quick', { id: s.id('late'), rateLimitKey: key });
      await client.start(Rated, 'quick', { id: s.id('after'), rateLimitKey: key });
      await client.terminate(s.id('late'), 'too late');
      expect(await engine.drain()).toBe(1);
      await terminated(engine, s.id('late'), 'too late');
      expect(await client.getStatus(s.id('after'))).toMatchObject({ status: 'pending', runs: 0 });
      engine.clock.advance('1h');
      expect(await engine.drain()).toBe(1);
      expect(await client.getStatus(s.id('after'))).toMatchObject({ status: 'completed', output: 'quick' });
    });
  });
}
