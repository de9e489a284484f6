import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

class Counter {
  calls: string[] = [];
  hit(name: string): string {
    this.calls.push(name);
    return `${name}-done`;
  }
}

@Workflow('basic.three-steps')
class ThreeSteps implements WorkflowDefinition<{ n: number }, { results: string[]; n: number }> {
  constructor(private readonly counter: Counter) {}
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => this.counter.hit('a'));
    const b = await ctx.step('b', () => this.counter.hit('b'));
    await ctx.sleep('nap', '10m');
    const c = await ctx.step('c', () => this.counter.hit('c'));
    return { results: [a, b, c], n: input.n };
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('a workflow', () => {
  it('completes, running each step once, across a durable sleep', async () => {
    const counter = new Counter();
    app = await createEngineApp({ workflows: [new ThreeSteps(counter)] });
    const handle = await app.client.start(ThreeSteps, { n: 7 }, { id: 'one' });
    expect(await app.worker.drain()).toBe(1);
    expect((await handle.status()).status).toBe('suspended');
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('10m');
    expect(await app.worker.drain()).toBe(1);
    const status = await handle.status();
    expect(status.status).toBe('completed');
    expect(status.output).toEqual({ results: ['a-done', 'b-done', 'c-done'], n: 7 });
    expect(counter.calls).toEqual(['a', 'b', 'c']);
    expect(await handle.result()).toEqual({ results: ['a-done', 'b-done', 'c-done'], n: 7 });
  });
});
