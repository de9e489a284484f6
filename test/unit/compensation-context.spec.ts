import { afterEach, describe, expect, it } from 'vitest';
import { NonRetryableError, Workflow, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const go = new WorkflowSignal<null>('compensation-context.go');

@Workflow('compensation-context.child')
class Child {
  async run() {
    return 'child';
  }
}

type Use = 'step' | 'sleep' | 'wait' | 'child' | 'now' | 'after-await' | 'all';

/** What each compensation tries on the workflow's own context. */
const uses: Record<Use, (ctx: WorkflowContext) => Promise<unknown>> = {
  step: (ctx) => ctx.step('undo', () => 'undone'),
  sleep: (ctx) => ctx.sleep('pause', '1s'),
  wait: (ctx) => ctx.waitForSignal('go', go),
  child: (ctx) => ctx.startChild('child', Child, {}),
  now: async (ctx) => ctx.now(),
  'after-await': async (ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return ctx.step('undo', () => 'undone');
  },
  all: (ctx) => Promise.all([Promise.resolve('plain'), ctx.step('undo-a', () => 'a'), ctx.step('undo-b', () => 'b')]),
};

class Probe {
  attempts = 0;
  /** What run()'s stray branch saw when it called ctx while a compensation ran. */
  stray: unknown[] = [];
}

@Workflow('compensation-context.uses-ctx')
class UsesContext {
  constructor(private readonly probe: Probe) {}
  async run(ctx: WorkflowContext, input: { use: Use }) {
    await ctx.step('book', () => 'booked', {
      compensateRetry: { attempts: 2, backoff: '1s' },
      compensate: async () => {
        this.probe.attempts++;
        await uses[input.use](ctx);
      },
    });
    await ctx.step('fail', () => {
      throw new NonRetryableError('no');
    });
  }
}

@Workflow('compensation-context.stray')
class StrayBranch {
  constructor(private readonly probe: Probe) {}
  async run(ctx: WorkflowContext) {
    let release!: () => void;
    const compensating = new Promise<void>((resolve) => (release = resolve));
    await ctx.step('book', () => 'booked', {
      compensate: async () => {
        release();
        // Long enough for run()'s stray branch to make its call while this compensation runs.
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
    });
    // A branch of run() that nothing awaits: it calls ctx while the compensation runs.
    void compensating.then(async () => {
      try {
        await ctx.step('late', () => 'late');
      } catch (error) {
        this.probe.stray.push(error);
      }
    });
    await ctx.step('fail', () => {
      throw new NonRetryableError('no');
    });
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('ctx calls inside a compensation', () => {
  it.each<Use>(['step', 'sleep', 'wait', 'child', 'now', 'after-await', 'all'])(
    'fail the compensation attempt with a TypeError (%s), retried with compensateRetry, then end compensation_failed',
    async (use) => {
      const probe = new Probe();
      app = await createEngineApp({ workflows: [Child, new UsesContext(probe), new StrayBranch(probe)] });
      const handle = await app.client.start(UsesContext, { use }, { id: `uses-${use}` });
      for (let i = 0; i < 4; i++) {
        await app.worker.drain();
        app.clock.advance('1m');
      }
      const status = await handle.status({ journal: true });
      expect(status.status).toBe('compensation_failed');
      expect(probe.attempts).toBe(2);
      expect(status.error).toMatchObject({
        name: 'NonRetryableError',
        compensation: {
          name: 'TypeError',
          step: 'book',
          message: expect.stringMatching(/can't be used inside a compensation/),
        },
      });
      expect((status.error as unknown as { compensation: { message: string } }).compensation.message).toMatch(
        /compensateRetry/,
      );
      // Nothing the compensation tried on ctx was journaled, and no child was started.
      expect(status.journal!.map((e) => e.name).sort()).toEqual(['$compensate:book', 'book', 'fail']);
      expect(await app.client.list({ parentId: handle.id })).toEqual([]);
    },
  );

  it('leaves a ctx call from a stray branch of run() as it was (the run ended), and the compensation completes', async () => {
    const probe = new Probe();
    app = await createEngineApp({ workflows: [Child, new UsesContext(probe), new StrayBranch(probe)] });
    const handle = await app.client.start(StrayBranch, {});
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'NonRetryableError' });
    expect(probe.stray).toHaveLength(1);
    expect(probe.stray[0]).toMatchObject({ name: 'WorkflowInterrupt', reason: 'ended' });
  });
});
