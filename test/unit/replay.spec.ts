import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  NonRetryableError,
  Workflow,
  WorkflowAlreadyStartedError,
  WorkflowNotFoundError,
  type WorkflowContext,
} from '../../src/index.js';
import { systemClock } from '../../src/time/workflow-clock.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** A promise resolved from outside. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

class Effects {
  calls: string[] = [];
  gate: Promise<void> | null = null;
  failures = new Map<string, number>();
  hit(name: string): string {
    this.calls.push(name);
    const left = this.failures.get(name) ?? 0;
    if (left > 0) {
      this.failures.set(name, left - 1);
      throw new Error(`${name} failed (${left} failures left)`);
    }
    return name.toUpperCase();
  }
}

@Workflow('replay.blocking')
class Blocking {
  constructor(private readonly effects: Effects) {}
  async run(ctx: WorkflowContext) {
    const a = await ctx.step('a', () => this.effects.hit('a'));
    const b = await ctx.step('b', async () => {
      const gate = this.effects.gate;
      this.effects.gate = null;
      const value = this.effects.hit('b');
      if (gate) await gate;
      return value;
    });
    const c = await ctx.step('c', () => this.effects.hit('c'));
    return [a, b, c];
  }
}

@Workflow('replay.retrying', { retry: { attempts: 4, backoff: '1s', factor: 3 } })
class Retrying {
  constructor(private readonly effects: Effects) {}
  async run(ctx: WorkflowContext) {
    return ctx.step('flaky', () => this.effects.hit('flaky'));
  }
}

let app: EngineApp;
let other: EngineApp | undefined;
afterEach(async () => {
  await other?.close();
  other = undefined;
  await app?.close();
});

describe('replay after a lost lease', () => {
  it('does not run a completed step again after the lease is lost and another worker takes over', async () => {
    const store = new InMemoryWorkflowStore();
    const effectsA = new Effects();
    const effectsB = new Effects();
    app = await createEngineApp({ workflows: [new Blocking(effectsA)], store });
    other = await createEngineApp({ workflows: [new Blocking(effectsB)], store });
    other.clock.set(app.clock.now());
    const gate = deferred();
    effectsA.gate = gate.promise;
    await app.client.start(Blocking, null, { id: 'lost' });
    const first = app.worker.drain();
    while (!effectsA.calls.includes('b')) await new Promise((r) => setImmediate(r));
    // Worker A is stuck inside step b; its lease (30s) lapses and worker B claims the instance.
    other.clock.advance('31s');
    app.clock.advance('31s');
    expect(await other.worker.drain()).toBe(1);
    expect(effectsB.calls).toEqual(['b', 'c']);
    gate.resolve();
    await first;
    const done = await app.client.getStatus('lost', { journal: true });
    expect(done.status).toBe('completed');
    expect(done.output).toEqual(['A', 'B', 'C']);
    // A ran a and the first attempt of b; B replayed a and ran b (its second attempt: A's was cut
    // short, and a re-run after a crash or a lost lease is the next attempt) and c. A's late result of b was fenced off.
    expect(effectsA.calls).toEqual(['a', 'b']);
    expect(done.journal!.map((e) => [e.name, e.state, e.attempts])).toEqual([
      ['a', 'completed', 1],
      ['b', 'completed', 2],
      ['c', 'completed', 1],
    ]);
  });
});

describe('retries', () => {
  it('follows the backoff timeline exactly, with no process waiting', async () => {
    const effects = new Effects();
    app = await createEngineApp({ workflows: [new Retrying(effects)] });
    effects.failures.set('flaky', 3);
    const start = app.clock.now();
    const handle = await app.client.start(Retrying, null);
    expect(await app.worker.drain()).toBe(1);
    let status = await handle.status();
    expect(status.status).toBe('suspended');
    expect(status.wakeAt).toBe(start + 1_000);
    app.clock.advance(999);
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance(1);
    expect(await app.worker.drain()).toBe(1);
    status = await handle.status();
    expect(status.wakeAt).toBe(start + 1_000 + 3_000);
    app.clock.advance(2_999);
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance(1);
    expect(await app.worker.drain()).toBe(1);
    expect((await handle.status()).wakeAt).toBe(start + 4_000 + 9_000);
    app.clock.advance(9_000);
    expect(await app.worker.drain()).toBe(1);
    expect(await handle.result()).toBe('FLAKY');
    const retrying = app.events.filter((e) => e.type === 'step-retrying');
    expect(retrying.map((e) => (e as { retryAt: number }).retryAt)).toEqual([
      start + 1_000,
      start + 4_000,
      start + 13_000,
    ]);
    expect(effects.calls).toEqual(['flaky', 'flaky', 'flaky', 'flaky']);
  });

  it('fails the instance once attempts run out, with the last error', async () => {
    const effects = new Effects();
    app = await createEngineApp({ workflows: [new Retrying(effects)] });
    effects.failures.set('flaky', 10);
    const handle = await app.client.start(Retrying, null);
    for (let i = 0; i < 4; i++) {
      await app.worker.drain();
      app.clock.advance('1h');
    }
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'Error', message: 'flaky failed (7 failures left)' });
    await expect(handle.result()).rejects.toThrow('flaky failed (7 failures left)');
    expect(effects.calls).toHaveLength(4);
  });

  it('skips the retries of a NonRetryableError', async () => {
    @Workflow('replay.non-retryable')
    class Fatal {
      calls = 0;
      async run(ctx: WorkflowContext) {
        return ctx.step('boom', () => {
          this.calls++;
          throw new NonRetryableError('card declined');
        });
      }
    }
    const fatal = new Fatal();
    app = await createEngineApp({ workflows: [fatal] });
    const handle = await app.client.start(Fatal, null);
    expect(await app.worker.drain()).toBe(1);
    expect((await handle.status()).status).toBe('failed');
    await expect(handle.result()).rejects.toMatchObject({ name: 'NonRetryableError', message: 'card declined' });
    expect(fatal.calls).toBe(1);
  });
});

describe('idempotent start', () => {
  it('returns the existing instance for the same workflow and input, and refuses another', async () => {
    @Workflow('start.other')
    class Other {
      async run() {
        return 1;
      }
    }
    app = await createEngineApp({ workflows: [new Retrying(new Effects()), Other] });
    const a = await app.client.start(Retrying, { x: 1, y: [1, 2] }, { id: 'same' });
    const b = await app.client.start(Retrying, { y: [1, 2], x: 1 }, { id: 'same' });
    expect(b.id).toBe(a.id);
    expect(await app.client.list()).toHaveLength(1);
    await expect(app.client.start(Retrying, { x: 2 }, { id: 'same' })).rejects.toBeInstanceOf(
      WorkflowAlreadyStartedError,
    );
    await expect(app.client.start(Other, { x: 1, y: [1, 2] }, { id: 'same' })).rejects.toThrow(/another workflow/);
    // Finished instances too.
    await app.worker.drain();
    expect((await app.client.start(Retrying, { x: 1, y: [1, 2] }, { id: 'same' })).id).toBe('same');
    expect(await app.worker.drain()).toBe(0);
  });

  it('throws WorkflowNotFoundError for an unknown id', async () => {
    app = await createEngineApp({ workflows: [new Retrying(new Effects())] });
    await expect(app.client.getStatus('nope')).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});

describe('startAt', () => {
  it('does not run an instance before its start time', async () => {
    app = await createEngineApp({ workflows: [new Retrying(new Effects())] });
    const at = new Date(app.clock.now() + 60_000);
    const handle = await app.client.start(Retrying, null, { startAt: at });
    expect(await app.worker.drain()).toBe(0);
    expect((await handle.status()).status).toBe('pending');
    app.clock.advance('59s');
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('1s');
    expect(await app.worker.drain()).toBe(1);
    expect((await handle.status()).status).toBe('completed');
  });

  it("is stored in whole milliseconds (a fraction rounded up: the SQL stores keep bigints), and refused past a Date's range", async () => {
    app = await createEngineApp({ workflows: [new Retrying(new Effects())] });
    const handle = await app.client.start(Retrying, null, { startAt: app.clock.now() + 1_000.25 });
    expect((await handle.status()).wakeAt).toBe(app.clock.now() + 1_001);
    await expect(app.client.start(Retrying, null, { startAt: 1e300 })).rejects.toThrow(
      /Invalid start\(\) option "startAt": 1e\+300/,
    );
    await expect(app.client.list({ createdFrom: 1e300 })).rejects.toThrow(/Invalid list\(\) option "createdFrom"/);
    expect(
      await app.client.list({ createdFrom: app.clock.now() - 0.5, createdBefore: app.clock.now() + 0.5 }),
    ).toHaveLength(1);
  });
});

describe('shutdown', () => {
  it('hands back an instance whose step stopped on ctx.signal, due at once, without recording a failure', async () => {
    const started = deferred();
    @Workflow('shutdown.long')
    class Long {
      async run(ctx: WorkflowContext) {
        await ctx.step('first', () => 1);
        return ctx.step('long', ({ signal }) => {
          started.resolve();
          return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
        });
      }
    }
    const store = new InMemoryWorkflowStore();
    const running = await createEngineApp({ workflows: [Long], store, worker: { pollInterval: 5 } });
    const { clock } = running;
    await running.client.start(Long, null, { id: 'long' });
    await started.promise;
    await running.close();
    const instance = await store.get('long', { journal: true });
    expect(instance!.status).toBe('running');
    expect(instance!.leaseToken).toBeNull();
    expect(instance!.wakeAt).toBeLessThanOrEqual(clock.now());
    expect(instance!.journal!.map((e) => [e.name, e.state])).toEqual([['first', 'completed']]);
    // Another process picks it up where it stopped.
    app = await createEngineApp({ workflows: [Long], store });
    app.clock.set(clock.now());
    const run = app.worker.drain();
    await new Promise((r) => setTimeout(r, 20));
    expect((await store.get('long'))!.runs).toBe(2);
    await app.close();
    await run;
    app = undefined as never;
  });
});

describe('drain and events', () => {
  it('returns the number of executions and emits events in order', async () => {
    const effects = new Effects();
    app = await createEngineApp({ workflows: [new Retrying(effects)] });
    effects.failures.set('flaky', 1);
    const handle = await app.client.start(Retrying, null, { id: 'ev' });
    expect(await app.worker.drain()).toBe(1);
    app.clock.advance('1s');
    expect(await app.worker.drain()).toBe(1);
    expect(await handle.result()).toBe('FLAKY');
    expect(app.events.map((e) => e.type)).toEqual([
      'workflow-started',
      'step-retrying',
      'workflow-suspended',
      'workflow-resumed',
      'step-completed',
      'workflow-completed',
    ]);
    expect(
      app.events.every((e) => 'id' in e && e.id === 'ev' && e.workflow === 'replay.retrying' && e.version === 1),
    ).toBe(true);
  });
});

describe('the background worker', () => {
  it('runs instances started through the client without drain()', async () => {
    const background = await createEngineApp({
      workflows: [new Blocking(new Effects())],
      clock: systemClock,
      worker: { pollInterval: '1h' },
    });
    const { client } = background;
    const handles = await Promise.all([1, 2, 3].map((i) => client.start(Blocking, i)));
    const results = await Promise.all(handles.map((h) => h.result({ timeout: '5s' })));
    expect(results).toEqual([
      ['A', 'B', 'C'],
      ['A', 'B', 'C'],
      ['A', 'B', 'C'],
    ]);
    expect(background.worker.id).toMatch(/:/);
    await background.close();
  });
});
