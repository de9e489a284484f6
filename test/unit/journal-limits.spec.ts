import { afterEach, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createEngineApp, type EngineApp } from './support/engine-app.js';

// The journal's size limits: the warning, and the hard limit that fails an instance before a side
// effect it could not record.

let app: EngineApp;
afterEach(async () => app?.close());

describe('the journal limit', () => {
  const effects: string[] = [];

  @Workflow('journal.journal-limit')
  class Loop {
    async run(ctx: WorkflowContext) {
      for (let i = 0; ; i++) {
        await ctx.step(`s${i}`, () => void effects.push(`do ${i}`), {
          compensate: () => void effects.push(`undo ${i}`),
        });
      }
    }
  }

  it('stops before the side effect of a step it could not record, so every effect that ran is undone', async () => {
    app = await createEngineApp({ workflows: [Loop], journal: { maxEntries: 2 } });
    const handle = await app.client.start(Loop, null);
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error?.name).toBe('WorkflowJournalLimitError');
    expect(effects).toEqual(['do 0', 'do 1', 'undo 1', 'undo 0']);
  });
});

describe('the journal size warning', () => {
  @Workflow('journal.journal-bytes')
  class OneStep {
    async run(ctx: WorkflowContext) {
      return ctx.step('only', () => 'x'.repeat(200));
    }
  }

  it('fires when the entry that crosses warnBytes is recorded, and counts that entry', async () => {
    app = await createEngineApp({ workflows: [OneStep], journal: { warnBytes: 100 } });
    const handle = await app.client.start(OneStep, null);
    await app.worker.drain();
    expect((await handle.status()).status).toBe('completed');
    const warnings = app.events.filter((e) => e.type === 'journal-large');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ entries: 1 });
    expect((warnings[0] as unknown as { bytes: number }).bytes).toBeGreaterThan(200);
  });
});

describe('the journal entry limits', () => {
  it('warns once at the warn threshold and fails with WorkflowJournalLimitError at the max, after compensating', async () => {
    const undone: number[] = [];
    @Workflow('journal.loop')
    class Loop {
      async run(ctx: WorkflowContext) {
        for (let i = 0; ; i++) await ctx.step(`s${i}`, () => i, { compensate: () => undone.push(i) });
      }
    }
    app = await createEngineApp({ workflows: [Loop], journal: { warnEntries: 3, maxEntries: 5 } });
    const handle = await app.client.start(Loop, null);
    await app.worker.drain();
    const status = await handle.status({ journal: true });
    expect(status.status).toBe('failed');
    expect(status.error!.name).toBe('WorkflowJournalLimitError');
    expect(status.journal!.filter((e) => e.kind === 'step')).toHaveLength(5);
    expect(undone).toEqual([4, 3, 2, 1, 0]);
    expect(app.events.filter((e) => e.type === 'journal-large')).toHaveLength(1);
  });
});
