import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const ran: string[] = [];

describe('a worker whose lease ran out by its own clock', () => {
  @Workflow('lease.stalls')
  class Stalls {
    async run(ctx: WorkflowContext, what: 'step' | 'child' | 'compensation') {
      await ctx.step(
        'first',
        () => {
          ran.push('first');
          // The process stalls (SIGSTOP, a long pause) past its 30 s lease while the step runs.
          app!.clock.advance(31_000);
          return 1;
        },
        { compensate: () => void ran.push('undo first') },
      );
      if (what === 'child') await ctx.startChild('kid', Kid, null);
      if (what === 'compensation') throw new Error('fails, so the first step is compensated');
      await ctx.step('second', () => void ran.push('second'));
    }
  }

  @Workflow('lease.kid')
  class Kid {
    async run() {
      ran.push('kid');
    }
  }

  it.each(['step', 'child', 'compensation'] as const)(
    'starts no %s after the stall; the next claim runs it once',
    async (what) => {
      ran.length = 0;
      app = await createEngineApp({ workflows: [Stalls, Kid] });
      const handle = await app.client.start(Stalls, what, { id: `stall-${what}` });
      await app.worker.drain({ limit: 1 });
      expect(ran).toEqual(['first']);
      // The first step's result was kept (written before the check); the instance is taken over later.
      const journal = (await app.client.getStatus(handle.id, { journal: true })).journal!;
      expect(journal.map((e) => [e.name, e.state])).toEqual([['first', 'completed']]);
      expect(app.logged('warn').some((m) => m.includes(`"stall-${what}"`))).toBe(true);

      await app.worker.drain();
      const expected = {
        step: ['first', 'second'],
        child: ['first', 'second', 'kid'],
        compensation: ['first', 'undo first'],
      }[what];
      expect(ran).toEqual(expected);
      expect((await handle.status()).status).toBe(what === 'compensation' ? 'failed' : 'completed');
    },
  );
});

describe('graceful shutdown that times out', () => {
  @Workflow('lease.hangs')
  class Hangs {
    async run(ctx: WorkflowContext) {
      await ctx.step('quick', () => 1);
      await ctx.step('stuck', () => new Promise(() => undefined));
    }
  }

  it('logs what still runs (id, workflow, step) and releases its lease, due now', async () => {
    const store = new InMemoryWorkflowStore();
    app = await createEngineApp({
      workflows: [Hangs],
      store,
      worker: { pollInterval: '10ms', shutdownTimeout: '50ms' },
    });
    await app.client.start(Hangs, null, { id: 'hangs' });
    for (
      let i = 0;
      i < 200 && !(await store.get('hangs', { journal: true }))?.journal?.some((e) => e.name === 'quick');
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const closed = app;
    await closed.close();
    app = undefined;
    expect(closed.logged('warn')).toContainEqual(
      expect.stringContaining(
        'Instance "hangs" (lease.hangs@1) was still running step "stuck" when shutdownTimeout passed',
      ),
    );
    const stored = await store.get('hangs', { journal: true });
    expect(stored).toMatchObject({ status: 'running', leaseToken: null, leaseUntil: null });
    expect(stored!.wakeAt).not.toBeNull();
    expect(stored!.journal!.map((e) => e.name)).toEqual(['quick']);
  });
});

describe('graceful shutdown with more than ten executions running', () => {
  @Workflow('lease.many')
  class Many {
    async run(ctx: WorkflowContext) {
      await ctx.step('quick', () => 1);
      // Runs until the shutdown aborts it.
      await ctx.step(
        'until-shutdown',
        ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
      );
    }
  }

  it('stops every one and hands each back, with no listener-leak warning', async () => {
    const store = new InMemoryWorkflowStore();
    const nodeWarnings: Error[] = [];
    const onWarning = (warning: Error) => nodeWarnings.push(warning);
    process.on('warning', onWarning);
    try {
      app = await createEngineApp({
        workflows: [Many],
        store,
        worker: { pollInterval: '10ms', concurrency: 25, shutdownTimeout: '5s' },
      });
      const ids = Array.from({ length: 25 }, (_, i) => `many-${i}`);
      for (const id of ids) await app.client.start(Many, null, { id });
      const started = async () =>
        (await Promise.all(ids.map((id) => store.get(id, { journal: true })))).every((i) =>
          i?.journal?.some((e) => e.name === 'quick'),
        );
      for (let i = 0; i < 500 && !(await started()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await started()).toBe(true);
      const closed = app;
      await closed.close();
      app = undefined;
      await new Promise((resolve) => setImmediate(resolve));
      expect(nodeWarnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
      for (const id of ids) {
        const stored = await store.get(id, { journal: true });
        expect(stored).toMatchObject({ status: 'running', leaseToken: null, leaseUntil: null });
        // Handed back by the shutdown (not left for shutdownTimeout): the stopped step is not recorded as done.
        expect(stored!.journal!.map((e) => e.name)).toEqual(['quick']);
      }
      expect(closed.logged('warn').filter((m) => m.includes('shutdownTimeout'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('attempts across a crash', () => {
  const attempts: Array<[string, number]> = [];
  let steal: string | null = null;

  /** Another worker claims the instance while this step runs (the lease lapsed): this execution is cut short, as by a crash. */
  async function stealDuring(ctxId: string, name: string) {
    if (steal !== name) return;
    steal = null;
    app!.clock.advance(31_000);
    const now = app!.clock.now();
    const { instances } = await store.claim({
      owner: 'other',
      token: `t-${name}`,
      now,
      leaseUntil: now + 1,
      limit: 1,
      workflows: [{ name: 'lease.counted', version: 1 }],
    });
    expect(instances.map((i) => i.id)).toEqual([ctxId]);
  }

  let store: InMemoryWorkflowStore;

  @Workflow('lease.counted')
  class Counted {
    async run(ctx: WorkflowContext) {
      for (const name of ['one', 'two']) {
        await ctx.step(name, async ({ attempt }) => {
          attempts.push([name, attempt]);
          await stealDuring(ctx.id, name);
          return attempt;
        });
      }
    }
  }

  it.each(['one', 'two'])(
    'counts a re-run of step "%s" after its execution was cut short as the next attempt',
    async (name) => {
      attempts.length = 0;
      steal = name;
      store = new InMemoryWorkflowStore();
      app = await createEngineApp({ workflows: [Counted], store });
      const handle = await app.client.start(Counted, null, { id: `counted-${name}` });
      await app.worker.drain();
      app.clock.advance(10);
      await app.worker.drain();
      expect((await handle.status()).status).toBe('completed');
      expect(attempts).toEqual(
        name === 'one'
          ? [
              ['one', 1],
              ['one', 2],
              ['two', 1],
            ]
          : [
              ['one', 1],
              ['two', 1],
              ['two', 2],
            ],
      );
      const journal = (await app.client.getStatus(handle.id, { journal: true })).journal!;
      expect(journal.map((e) => [e.name, e.state, e.attempts])).toEqual([
        ['one', 'completed', name === 'one' ? 2 : 1],
        ['two', 'completed', name === 'two' ? 2 : 1],
      ]);
    },
  );
});

describe('many steps in parallel that read ctx.signal', () => {
  @Workflow('lease.parallel-signal')
  class ParallelSignal {
    async run(ctx: WorkflowContext) {
      // Each step with a timeout listens to the execution's signal while it runs.
      return Promise.all(
        Array.from({ length: 15 }, (_, i) =>
          ctx.step(`s${i}`, ({ signal }) => (signal.aborted ? -1 : i), { timeout: '1m' }),
        ),
      );
    }
  }

  it('runs them without a listener-leak warning', async () => {
    const nodeWarnings: Error[] = [];
    const onWarning = (warning: Error) => nodeWarnings.push(warning);
    process.on('warning', onWarning);
    try {
      app = await createEngineApp({ workflows: [ParallelSignal] });
      const handle = await app.client.start(ParallelSignal, null);
      await app.worker.drain();
      await expect(handle.result()).resolves.toEqual(Array.from({ length: 15 }, (_, i) => i));
      await new Promise((resolve) => setImmediate(resolve));
      expect(nodeWarnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
