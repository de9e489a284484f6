import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowDefinition } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

@Workflow('list.noop')
class Noop implements WorkflowDefinition<number, number> {
  async run(_ctx: WorkflowContext, n: number) {
    return n;
  }
}

let app: EngineApp;
afterEach(async () => app?.close());

describe('WorkflowClient.list()', () => {
  it('pages newest first by keyset position, filters by id prefix and created range', async () => {
    app = await createEngineApp({ workflows: [Noop] });
    for (let i = 0; i < 5; i += 1) {
      await app.client.start(Noop, i, { id: `job-${i}` });
      app.clock.advance('1s');
    }
    await app.client.start(Noop, 9, { id: 'other' });
    const start = new Date('2026-01-01T00:00:00Z').getTime();
    const ids = (list: Array<{ id: string }>) => list.map((i) => i.id);

    const first = await app.client.list({ idPrefix: 'job-', order: 'desc', limit: 2 });
    expect(ids(first)).toEqual(['job-4', 'job-3']);
    const second = await app.client.list({ idPrefix: 'job-', order: 'desc', limit: 2, after: first.at(-1) });
    expect(ids(second)).toEqual(['job-2', 'job-1']);
    expect(ids(await app.client.list({ createdFrom: new Date(start + 1000), createdBefore: start + 3000 }))).toEqual([
      'job-1',
      'job-2',
    ]);
  });

  it('refuses bad options with a message that says what to pass, and reads nothing', async () => {
    app = await createEngineApp({ workflows: [Noop] });
    await expect(app.client.list({ idPrefix: '' })).rejects.toThrow(
      'Invalid list() option "idPrefix": "". Use a non-empty string',
    );
    await expect(app.client.list({ order: 'newest' as never })).rejects.toThrow(
      `Invalid list() option "order": "newest". Use 'asc' or 'desc'.`,
    );
    await expect(app.client.list({ after: { createdAt: Number.NaN, id: 'x' } })).rejects.toThrow(
      'Invalid list() option "after"',
    );
    await expect(app.client.list({ createdFrom: new Date('nope') })).rejects.toThrow(
      'Invalid list() option "createdFrom"',
    );
  });
});
