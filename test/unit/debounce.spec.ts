// start(..., { debounce }): one instance per burst of starts with one key, run with the last input
// once the period passed since the last start (or maxWait since the first), and what is refused.
import { afterEach, describe, expect, it } from 'vitest';
import { isWorkflowInputError, Workflow, WorkflowDebounceError, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

const DAY = 86_400_000;

let app: EngineApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

@Workflow('debounce.reindex')
class Reindex {
  static runs: unknown[] = [];
  async run(ctx: WorkflowContext, input: { tenant: string; rev: number }) {
    Reindex.runs.push(input);
    return ctx.step('index', () => input.rev);
  }
}

describe('start() with debounce', () => {
  it('runs one instance with the last input once the period passed since the last start', async () => {
    Reindex.runs = [];
    app = await createEngineApp({ workflows: [Reindex] });
    const debounce = { key: 'tenant-1', period: '10s' };
    const first = await app.client.start(Reindex, { tenant: 't1', rev: 1 }, { debounce });
    app.clock.advance('8s');
    expect(await app.worker.drain()).toBe(0);
    const second = await app.client.start(Reindex, { tenant: 't1', rev: 2 }, { debounce });
    expect(second.id).toBe(first.id);
    app.clock.advance('8s');
    // 16 s after the first start, 8 s after the second: not due yet.
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('2s');
    expect(await app.worker.drain()).toBe(1);
    expect(Reindex.runs).toEqual([{ tenant: 't1', rev: 2 }]);
    expect(await first.status()).toMatchObject({ status: 'completed', output: 2 });
    // It ran: the next start is a new burst.
    const third = await app.client.start(Reindex, { tenant: 't1', rev: 3 }, { debounce });
    expect(third.id).not.toBe(first.id);
    expect(await app.client.list({ workflow: 'debounce.reindex' })).toHaveLength(2);
  });

  it('keeps a period of 7 days, and maxWait bounds how long the burst waits', async () => {
    Reindex.runs = [];
    app = await createEngineApp({ workflows: [Reindex] });
    const debounce = { key: 'weekly', period: '7d', maxWait: '10d' };
    const start = app.clock.now();
    const handle = await app.client.start(Reindex, { tenant: 'w', rev: 1 }, { debounce });
    expect((await handle.status()).wakeAt).toBe(start + 7 * DAY);
    app.clock.advance('6d');
    await app.client.start(Reindex, { tenant: 'w', rev: 2 }, { debounce });
    // Now + 7 days would be day 13: maxWait holds it at day 10.
    expect((await handle.status()).wakeAt).toBe(start + 10 * DAY);
    app.clock.advance('3d');
    expect(await app.worker.drain()).toBe(0);
    app.clock.advance('1d');
    expect(await app.worker.drain()).toBe(1);
    expect(Reindex.runs).toEqual([{ tenant: 'w', rev: 2 }]);
  });

  it('keeps bursts of different keys apart', async () => {
    app = await createEngineApp({ workflows: [Reindex] });
    const a = await app.client.start(Reindex, { tenant: 'a', rev: 1 }, { debounce: { key: 'a', period: '1s' } });
    const b = await app.client.start(Reindex, { tenant: 'b', rev: 1 }, { debounce: { key: 'b', period: '1s' } });
    expect(a.id).not.toBe(b.id);
  });

  it('refuses a bad debounce with a WorkflowDebounceError that says what to change, and stores nothing', async () => {
    app = await createEngineApp({ workflows: [Reindex] });
    const input = { tenant: 't', rev: 1 };
    const refused = async (options: object, message: RegExp) => {
      const error = await app!.client.start(Reindex, input, options as never).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(WorkflowDebounceError);
      expect(isWorkflowInputError(error)).toBe(true);
      expect((error as Error).name).toBe('WorkflowDebounceError');
      expect((error as Error).message).toMatch(message);
    };
    await refused({ debounce: { key: 'k', period: 0 } }, /"period" 0 must be longer than 0/);
    await refused({ debounce: { key: 'k', period: '-5s' } }, /"period"/);
    await refused({ debounce: { key: 'k' } }, /"period" is required/);
    await refused({ debounce: { key: '', period: '1s' } }, /"key" must be a non-empty string/);
    await refused({ debounce: { key: 'k', period: '10s', maxWait: '5s' } }, /"maxWait" "5s" is shorter than "period"/);
    await refused({ debounce: { key: 'k', period: '1s' }, id: 'mine' }, /can't be combined with "id"/);
    await refused({ debounce: { key: 'k', period: '1s' }, startAt: new Date() }, /can't be combined with "startAt"/);
    await refused({ debounce: { key: 'k', period: '1s', every: '1m' } }, /unknown key "every"/);
    await refused({ debounce: 'k' }, /must be an object/);
    await expect(
      app.client.start(Reindex, input, { debounce: { key: 'k'.repeat(256), period: '1s' } }),
    ).rejects.toThrow(/debounce key is 256 characters long.*at most 255/);
    expect(await app.client.list({ workflow: 'debounce.reindex' })).toEqual([]);
  });
});
