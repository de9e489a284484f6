import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowCancelledError,
  WorkflowClient,
  WorkflowSignal,
  WorkflowTerminatedError,
  WorkflowTimeoutError,
  type WorkflowContext,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// A workflow whose own code throws one of the errors the engine ends a stopped instance with (one it
// made itself, or one it got from another instance) fails: only its own cancel ends it `cancelled`.

class Undo {
  log: string[] = [];
  /** How many more times the undo of the booking fails (each failure waits out the backoff). */
  failures = 0;
  undo(): void {
    this.log.push('undo booking');
    if (this.failures > 0) {
      this.failures--;
      throw new Error('undo failed');
    }
  }
}

const go = new WorkflowSignal<null>('stop-errors.go');
const ERRORS = { WorkflowCancelledError, WorkflowTerminatedError, WorkflowTimeoutError };

@Workflow('stop-errors.throws', { retry: false })
class ThrowsStopError {
  constructor(private readonly undo: Undo) {}
  async run(ctx: WorkflowContext, input: { error: keyof typeof ERRORS; wait?: boolean }) {
    await ctx.step('book', () => 'B1', {
      compensate: () => this.undo.undo(),
      compensateRetry: { attempts: 3, backoff: '1m', factor: 1 },
    });
    if (input.wait) await ctx.waitForSignal('go', go, { key: ctx.id });
    await ctx.step('check', () => {
      throw new ERRORS[input.error](`raised by ${ctx.id} itself`);
    });
  }
}

/** Waits for a signal: the instance another one waits for, cancelled in the test. */
@Workflow('stop-errors.waiter')
class Waiter {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('never', go, { key: 'never' });
  }
}

@Workflow('stop-errors.awaits-other', { retry: false })
class AwaitsOther {
  constructor(
    private readonly undo: Undo,
    private readonly client: WorkflowClient,
  ) {}
  async run(ctx: WorkflowContext, other: string) {
    await ctx.step('book', () => 'B1', { compensate: () => this.undo.undo() });
    // Lets the other instance's WorkflowCancelledError escape run().
    return ctx.step('other', () => this.client.handle(other).result());
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

const typesOf = (id: string) => app.events.filter((e) => 'id' in e && e.id === id).map((e) => e.type);

describe('a workflow that throws a stop error of its own', () => {
  for (const name of Object.keys(ERRORS) as Array<keyof typeof ERRORS>) {
    it(`ends failed, after its compensations, when a step throws ${name}`, async () => {
      const undo = new Undo();
      app = await createEngineApp({ workflows: [new ThrowsStopError(undo)] });
      const handle = await app.client.start(ThrowsStopError, { error: name });
      await app.worker.drain();
      const status = await handle.status({ journal: true });
      expect(status.status).toBe('failed');
      expect(status.error).toMatchObject({ name, message: `raised by ${handle.id} itself` });
      expect(status.journal!.find((e) => e.name === 'book')).toMatchObject({ state: 'completed', compensated: true });
      expect(undo.log).toEqual(['undo booking']);
      const types = typesOf(handle.id);
      expect(types).toContain('workflow-failed');
      expect(types).not.toContain('workflow-cancelled');
      await expect(handle.result()).rejects.toBeInstanceOf(ERRORS[name]);
    });
  }

  it('ends failed when it lets the WorkflowCancelledError of another, cancelled instance escape', async () => {
    const undo = new Undo();
    app = await createEngineApp({ workflows: ({ client }) => [Waiter, new AwaitsOther(undo, client)] });
    const other = await app.client.start(Waiter, null);
    await app.worker.drain();
    await app.client.cancel(other.id, 'not needed');
    await app.worker.drain();
    expect((await other.status()).status).toBe('cancelled');
    const handle = await app.client.start(AwaitsOther, other.id);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: 'not needed' });
    expect(undo.log).toEqual(['undo booking']);
    expect(typesOf(handle.id)).toContain('workflow-failed');
    expect(typesOf(handle.id)).not.toContain('workflow-cancelled');
  });

  it('still ends failed when its compensations finish in a later execution, in another process', async () => {
    const store = new InMemoryWorkflowStore();
    const undo = new Undo();
    app = await createEngineApp({ workflows: [new ThrowsStopError(undo)], store });
    const other = await createEngineApp({ workflows: [new ThrowsStopError(new Undo())], store });
    try {
      undo.failures = 1;
      const handle = await app.client.start(ThrowsStopError, { error: 'WorkflowCancelledError' });
      await app.worker.drain();
      expect((await handle.status()).status).toBe('compensating');
      other.clock.advance('1m');
      await other.worker.drain();
      const status = await handle.status();
      expect(status.status).toBe('failed');
      expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: `raised by ${handle.id} itself` });
      const types = other.events.filter((e) => 'id' in e && e.id === handle.id).map((e) => e.type);
      expect(types.at(-1)).toBe('workflow-failed');
      expect(types).not.toContain('workflow-cancelled');
    } finally {
      await other.close();
    }
  });

  it('ends failed after retry() of its compensation_failed end', async () => {
    const undo = new Undo();
    app = await createEngineApp({ workflows: [new ThrowsStopError(undo)] });
    undo.failures = 3;
    const handle = await app.client.start(ThrowsStopError, { error: 'WorkflowCancelledError' });
    for (let i = 0; i < 3; i++) {
      await app.worker.drain();
      app.clock.advance('1m');
    }
    expect((await handle.status()).status).toBe('compensation_failed');
    await app.client.retry(handle.id);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: `raised by ${handle.id} itself` });
    expect(undo.log).toEqual(['undo booking', 'undo booking', 'undo booking', 'undo booking']);
    expect(typesOf(handle.id).at(-1)).toBe('workflow-failed');
    expect(typesOf(handle.id)).not.toContain('workflow-cancelled');
  });
});

describe('a cancelled workflow whose compensations end later', () => {
  it('ends cancelled when its compensations finish in a later execution, in another process', async () => {
    const store = new InMemoryWorkflowStore();
    const undo = new Undo();
    app = await createEngineApp({ workflows: [new ThrowsStopError(undo)], store });
    const other = await createEngineApp({ workflows: [new ThrowsStopError(new Undo())], store });
    try {
      undo.failures = 1;
      const handle = await app.client.start(ThrowsStopError, { error: 'WorkflowCancelledError', wait: true });
      await app.worker.drain();
      await app.client.cancel(handle.id, 'changed my mind');
      await app.worker.drain();
      expect((await handle.status()).status).toBe('compensating');
      other.clock.advance('1m');
      await other.worker.drain();
      const status = await handle.status();
      expect(status.status).toBe('cancelled');
      expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: 'changed my mind' });
      const types = other.events.filter((e) => 'id' in e && e.id === handle.id).map((e) => e.type);
      expect(types.at(-1)).toBe('workflow-cancelled');
      expect(types).not.toContain('workflow-failed');
    } finally {
      await other.close();
    }
  });

  it('ends cancelled after retry() of its compensation_failed end', async () => {
    const undo = new Undo();
    app = await createEngineApp({ workflows: [new ThrowsStopError(undo)] });
    undo.failures = 3;
    const handle = await app.client.start(ThrowsStopError, { error: 'WorkflowCancelledError', wait: true });
    await app.worker.drain();
    await app.client.cancel(handle.id, 'changed my mind');
    for (let i = 0; i < 3; i++) {
      await app.worker.drain();
      app.clock.advance('1m');
    }
    const ended = await handle.status();
    expect(ended.status).toBe('compensation_failed');
    expect(ended.error).toMatchObject({
      name: 'WorkflowCancelledError',
      message: 'changed my mind',
      compensation: { message: 'undo failed' },
    });
    await app.client.retry(handle.id);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('cancelled');
    expect(status.error).toMatchObject({ name: 'WorkflowCancelledError', message: 'changed my mind' });
    expect(status.error!.compensation).toBeUndefined();
    expect(typesOf(handle.id).at(-1)).toBe('workflow-cancelled');
  });
});
