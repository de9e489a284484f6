import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  Workflow,
  WorkflowNotFoundError,
  WorkflowStreamClosedError,
  WorkflowStreamLimitError,
  type WorkflowContext,
  type WorkflowStreamItem,
} from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

/** Every item until the reader ends. */
async function readAll<T>(items: AsyncIterable<WorkflowStreamItem<T>>): Promise<WorkflowStreamItem<T>[]> {
  const all: WorkflowStreamItem<T>[] = [];
  for await (const item of items) all.push(item);
  return all;
}

let bodyRuns = 0;

@Workflow('streams.body')
class BodyWrites {
  async run(ctx: WorkflowContext) {
    bodyRuns++;
    const out = ctx.stream<string>('out');
    await out.write('a');
    await ctx.sleep('pause', '1m');
    await out.write('b');
    await out.close();
    await out.close();
    return 'done';
  }
}

let failFirst = true;

@Workflow('streams.step')
class StepWrites {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'generate',
      async ({ attempt, stream }) => {
        const words = stream<string>('words');
        await words.write(`one@${attempt}`);
        if (attempt === 1 && failFirst) throw new Error('model overloaded');
        await words.write(`two@${attempt}`);
        return attempt;
      },
      { retry: { attempts: 3, backoff: '1s' } },
    );
  }
}

@Workflow('streams.refusals')
class Refusals {
  async run(ctx: WorkflowContext) {
    const out = ctx.stream('out');
    const errors: string[] = [];
    await out.write('x'.repeat(300 * 1024)).catch((e: Error) => errors.push(e.name));
    await out.close();
    await out.write('late').catch((e: Error) => errors.push(e.name));
    try {
      ctx.stream('');
    } catch (error) {
      errors.push((error as Error).name);
    }
    return errors;
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('streams', () => {
  it('records each body write once, in order, however often the body is replayed, and a reader ends at close()', async () => {
    app = await createEngineApp({ workflows: [BodyWrites] });
    bodyRuns = 0;
    const handle = await app.client.start(BodyWrites, {});
    await app.worker.drain();
    app.clock.advance('1m');
    await app.worker.drain();
    expect(bodyRuns).toBe(2);
    expect(await handle.result()).toBe('done');
    expect(await readAll(app.client.readStream(handle.id, 'out'))).toEqual([
      { seq: 1, value: 'a', step: null, attempt: null },
      { seq: 2, value: 'b', step: null, attempt: null },
    ]);
    expect(await readAll(app.client.readStream(handle.id, 'out', { after: 1 }))).toEqual([
      { seq: 2, value: 'b', step: null, attempt: null },
    ]);
  });

  it('follows a stream live: a reader started before the workflow sees values as they are written', async () => {
    app = await createEngineApp({ workflows: [BodyWrites] });
    const handle = await app.client.start(BodyWrites, {});
    const reader = app.client.readStream<string>(handle.id, 'out', { poll: { minDelay: 5, maxDelay: 20 } });
    const first = reader.next();
    await app.worker.drain();
    expect((await first).value).toMatchObject({ seq: 1, value: 'a' });
    const second = reader.next();
    app.clock.advance('1m');
    await app.worker.drain();
    expect((await second).value).toMatchObject({ seq: 2, value: 'b' });
    expect((await reader.next()).done).toBe(true);
  });

  it("tags a step's values with their attempt, marks a failed attempt's values discarded, and ends with the instance", async () => {
    app = await createEngineApp({ workflows: [StepWrites] });
    failFirst = true;
    const handle = await app.client.start(StepWrites, {});
    await app.worker.drain();
    app.clock.advance('1s');
    await app.worker.drain();
    expect(await handle.result()).toBe(2);
    // Never closed: the reader ends because the instance ended.
    expect(await readAll(app.client.readStream(handle.id, 'words'))).toEqual([
      { seq: 1, value: 'one@1', step: 'generate', attempt: 1 },
      { seq: 2, discarded: { step: 'generate', attempt: 1 } },
      { seq: 3, value: 'one@2', step: 'generate', attempt: 2 },
      { seq: 4, value: 'two@2', step: 'generate', attempt: 2 },
    ]);
  });

  it('refuses a value over maxValueBytes, a write after close() and a bad name, with clear errors', async () => {
    app = await createEngineApp({ workflows: [Refusals] });
    const handle = await app.client.start(Refusals, {});
    await app.worker.drain();
    expect(await handle.result()).toEqual(['WorkflowStreamLimitError', 'WorkflowStreamClosedError', 'TypeError']);
    expect(await readAll(app.client.readStream(handle.id, 'out'))).toEqual([]);
    expect(WorkflowStreamLimitError.name).toBe('WorkflowStreamLimitError');
    expect(WorkflowStreamClosedError.name).toBe('WorkflowStreamClosedError');
  });

  it('reads an unknown instance as WorkflowNotFoundError, and refuses a bad `after`', async () => {
    app = await createEngineApp({ workflows: [BodyWrites] });
    await expect(app.client.readStream('nope', 'out').next()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect(() => app.client.readStream('nope', 'out', { after: -1 })).toThrow(/`after` must be a seq/);
    expect(() => app.client.readStream('nope', 'a\nb')).toThrow(/Invalid stream name/);
  });

  it('stops a reader that waits when it is returned (a break out of for await)', async () => {
    app = await createEngineApp({ workflows: [BodyWrites] });
    const handle = await app.client.start(BodyWrites, {});
    const reader = app.client.readStream(handle.id, 'never-written');
    const waiting = reader.next();
    await new Promise((resolve) => setTimeout(resolve, 30));
    await reader.return!();
    expect((await waiting).done).toBe(true);
  });

  it('passes values through the payload codec: stored encoded, read back decoded', async () => {
    app = await createEngineApp({
      workflows: [BodyWrites],
      codec: new AesGcmPayloadCodec({ key: randomBytes(32) }),
    });
    const handle = await app.client.start(BodyWrites, {});
    await app.worker.drain();
    const raw = await app.store.readStream({ id: handle.id, stream: 'out', after: 0, limit: 10 });
    expect(String(raw.items[0]!.value)).toMatch(/^\$wfc1:/);
    const reader = app.client.readStream(handle.id, 'out');
    expect((await reader.next()).value).toMatchObject({ seq: 1, value: 'a' });
    await reader.return!();
  });
});
