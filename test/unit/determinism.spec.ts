import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

class Shape {
  /** Which body the workflow runs: tests change it between executions, as a deploy would. */
  variant: 'original' | 'removed-step' | 'renamed-kind' | 'duplicate' = 'original';
}

@Workflow('determinism.changing')
class Changing {
  constructor(private readonly shape: Shape) {}
  async run(ctx: WorkflowContext) {
    switch (this.shape.variant) {
      case 'original':
        await ctx.step('a', () => 1);
        await ctx.step('b', () => 2);
        await ctx.sleep('wait', '1m');
        return 'original';
      case 'removed-step':
        await ctx.step('b', () => 2);
        await ctx.sleep('wait', '1m');
        return 'removed';
      case 'renamed-kind':
        await ctx.sleep('a', '1s');
        return 'kind';
      case 'duplicate':
        await ctx.step('a', () => 1);
        await ctx.step('a', () => 1);
        return 'dup';
    }
  }
}

let app: EngineApp;
let shape: Shape;
afterEach(async () => app?.close());

async function suspendedOnce() {
  shape = new Shape();
  app = await createEngineApp({ workflows: [new Changing(shape)] });
  const handle = await app.client.start(Changing, null);
  await app.worker.drain();
  expect((await handle.status()).status).toBe('suspended');
  app.clock.advance('1m');
  return handle;
}

describe('determinism checks', () => {
  it('fails with WorkflowNonDeterminismError when a recorded step is never reached', async () => {
    const handle = await suspendedOnce();
    shape.variant = 'removed-step';
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error!.name).toBe('WorkflowNonDeterminismError');
    expect(status.error!.message).toMatch(/"a" was recorded by an earlier run but never reached.*new workflow version/);
  });

  it('fails when a name is reused for another kind of entry', async () => {
    const handle = await suspendedOnce();
    shape.variant = 'renamed-kind';
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'WorkflowNonDeterminismError' });
    expect(status.error!.message).toMatch(/recorded "a" as a step, but the code now reaches it as a sleep/);
  });

  it('fails when a name is used twice in one instance', async () => {
    shape = new Shape();
    app = await createEngineApp({ workflows: [new Changing(shape)] });
    shape.variant = 'duplicate';
    const handle = await app.client.start(Changing, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error!.message).toMatch(/used the name "a" twice/);
  });
});

describe('step results', () => {
  for (const [label, value, pattern] of [
    ['a function', () => 1, /step "bad".*a function/],
    ['a BigInt', 10n, /step "bad".*BigInt/],
    [
      'a cycle',
      (() => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      })(),
      /step "bad".*cycle/,
    ],
    ['NaN', { n: NaN }, /step "bad".*NaN at result\.n/],
  ] as const) {
    it(`fails the step when its result is ${label}, naming the step`, async () => {
      @Workflow(`results.${label.replace(/\W/g, '')}`, { retry: false })
      class Bad {
        async run(ctx: WorkflowContext) {
          return ctx.step('bad', () => value as unknown);
        }
      }
      app = await createEngineApp({ workflows: [Bad] });
      const handle = await app.client.start(Bad, null);
      await app.worker.drain();
      const status = await handle.status();
      expect(status.status).toBe('failed');
      expect(status.error!.message).toMatch(pattern);
    });
  }

  it('hands back results as JSON carries them, the same on the first run and on replay', async () => {
    const seen: unknown[] = [];
    @Workflow('results.json')
    class Json {
      async run(ctx: WorkflowContext) {
        const value = await ctx.step('v', () => ({ at: new Date(0), list: [1, undefined], skip: undefined }));
        seen.push(value);
        await ctx.sleep('s', '1s');
        return value;
      }
    }
    app = await createEngineApp({ workflows: [Json] });
    const handle = await app.client.start(Json, null);
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    expect(seen).toEqual([
      { at: '1970-01-01T00:00:00.000Z', list: [1, null] },
      { at: '1970-01-01T00:00:00.000Z', list: [1, null] },
    ]);
    expect(await handle.result()).toEqual({ at: '1970-01-01T00:00:00.000Z', list: [1, null] });
  });
});

describe('context values', () => {
  it('records now(), random() and uuid() so every replay sees the same values', async () => {
    const seen: Array<[number, number, string]> = [];
    @Workflow('values.recorded')
    class Values {
      async run(ctx: WorkflowContext) {
        const values: [number, number, string] = [ctx.now().getTime(), ctx.random(), ctx.uuid()];
        seen.push(values);
        ctx.setStatus({ stage: 'sleeping' });
        await ctx.sleep('s', '5m');
        ctx.setStatus({ stage: 'done' });
        return values;
      }
    }
    app = await createEngineApp({ workflows: [Values] });
    const start = app.clock.now();
    const handle = await app.client.start(Values, null);
    await app.worker.drain();
    expect((await handle.status()).customStatus).toEqual({ stage: 'sleeping' });
    app.clock.advance('5m');
    await app.worker.drain();
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]![0]).toBe(start);
    expect(seen[0]![1]).toBeGreaterThanOrEqual(0);
    expect(seen[0]![1]).toBeLessThan(1);
    expect(seen[0]![2]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const status = await handle.status();
    expect(status.customStatus).toEqual({ stage: 'done' });
    expect(status.output).toEqual(seen[0]);
  });
});

describe('parallel steps', () => {
  it('runs steps and sleeps given to Promise.all, and suspends until the latest is due', async () => {
    const calls: string[] = [];
    @Workflow('parallel.all')
    class Parallel {
      async run(ctx: WorkflowContext) {
        const [a, b] = await Promise.all([
          ctx.step('a', async () => (calls.push('a'), 'A')),
          ctx.step('b', async () => (calls.push('b'), 'B')),
          ctx.sleep('short', '1m'),
          ctx.sleep('long', '2m'),
        ]);
        return `${a}${b}`;
      }
    }
    app = await createEngineApp({ workflows: [Parallel] });
    const handle = await app.client.start(Parallel, null);
    await app.worker.drain();
    expect((await handle.status()).wakeAt).toBe(app.clock.now() + 60_000);
    app.clock.advance('1m');
    await app.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    app.clock.advance('1m');
    await app.worker.drain();
    expect(await handle.result()).toBe('AB');
    expect(calls.sort()).toEqual(['a', 'b']);
  });
});

describe('a branch still going after the run ended', () => {
  it('starts no new step after run() settled (the loser of a Promise.race)', async () => {
    const ran: string[] = [];
    let releaseSlow!: () => void;
    const slow = new Promise<void>((resolve) => (releaseSlow = resolve));
    @Workflow('race.loser')
    class Racer {
      async run(ctx: WorkflowContext) {
        const loser = (async () => {
          await ctx.step('slow', () => slow.then(() => 'slow'));
          ran.push('after slow');
          await ctx.step('late', () => ran.push('late step ran'));
        })();
        loser.catch(() => undefined);
        return Promise.race([ctx.step('fast', () => 'fast'), loser]);
      }
    }
    app = await createEngineApp({ workflows: [Racer] });
    const handle = await app.client.start(Racer, null);
    const drained = app.worker.drain();
    await new Promise((resolve) => setTimeout(resolve, 20));
    releaseSlow();
    await drained;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await handle.result()).toBe('fast');
    expect(ran).not.toContain('late step ran');
  });
});
