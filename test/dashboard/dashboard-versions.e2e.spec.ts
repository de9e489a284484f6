// The dashboard's Versions page over HTTP: unfinished instances counted per workflow version, beside
// the live worker processes that declare each (their records in the store), with a version no live
// process declares flagged. Two applications on one store declare different versions of a workflow;
// a crashed process's row is left out once stale, and a process that closes removes its own.
import type { INestApplication, INestApplicationContext } from '@nestjs/common';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  WorkflowClient,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
} from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { startDashboardApp } from './dashboard-app.js';

/** Version 2 of the dashboard app's `dash.order`, as the next release declares it. */
@Workflow('dash.order', { version: 2 })
class OrderFlowV2 {
  async run(ctx: WorkflowContext): Promise<string> {
    await ctx.waitForSignal('approval', 'order.approved');
    return 'v2';
  }
}

let apps: Array<INestApplication | INestApplicationContext> = [];
afterEach(async () => {
  for (const app of apps.splice(0).reverse()) await app.close();
});

/** The page's version rows as [workflow, version, unfinished, declared by, risk], tags stripped. */
async function versionRows(url: string): Promise<{ rows: string[][]; text: string }> {
  const response = await fetch(`${url}/workflows/versions`);
  expect(response.status).toBe(200);
  const text = (await response.text()).replace(/\s+/g, ' ');
  const table = text.slice(
    0,
    text.indexOf('Live worker processes') === -1 ? undefined : text.indexOf('Live worker processes'),
  );
  const rows = [
    ...table.matchAll(
      /<tr> <td class="id">([^<]+)<\/td> <td>(\d+)<\/td> <td>(.*?)<\/td> <td>(.*?)<\/td> <td>(.*?)<\/td> <\/tr>/g,
    ),
  ].map((match) => match.slice(1).map((cell) => cell.replace(/<[^>]+>/g, '').trim()));
  return { rows, text };
}

async function startSecondProcess(store: WorkflowStore, clock: ManualWorkflowClock): Promise<INestApplicationContext> {
  @Module({
    imports: [WorkflowsModule.forRoot({ store, clock, worker: { id: 'release-2' } })],
    providers: [OrderFlowV2],
  })
  class NextRelease {}
  const app = await NestFactory.createApplicationContext(NextRelease, { logger: false });
  await app.init();
  apps.push(app);
  return app;
}

describe('the Versions page', () => {
  it('shows per version the unfinished instances and the live processes that declare it, flagging what no live process declares', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const started = await startDashboardApp('express', { store, clock, worker: { id: 'release-1' } }, { guard: false });
    apps.push(started.app);
    const next = await startSecondProcess(store, clock);

    const client = started.app.get(WorkflowClient);
    for (const id of ['o-1', 'o-2', 'o-3']) await client.start('dash.order', { order: id }, { id });
    await next.get(WorkflowClient).start('dash.order', { order: 'n-1' }, { id: 'n-1' }); // version 2: its newest
    await client.pause('o-3'); // a paused one still counts: it is unfinished
    // An instance of a version no process declares, as an older release left it.
    await store.create({
      id: 'old-1',
      workflow: 'dash.order',
      version: 7,
      input: {},
      deadline: null,
      now: clock.now(),
    });
    // A process that crashed 2 minutes ago declaring version 7: stale, so it counts for nothing.
    await store.recordProcess!(
      {
        id: 'crashed',
        owner: 'release-0',
        host: 'gone',
        pid: 1,
        declared: [{ workflow: 'dash.order', version: 7 }],
        startedAt: clock.now() - 600_000,
        seenAt: clock.now() - 120_000,
      },
      0,
    );

    const { rows, text } = await versionRows(started.url);
    expect(text).toContain('aria-current="page">Versions</a>');
    expect(text).toContain('2 live worker processes recorded themselves');
    expect(rows).toEqual([
      ['dash.flaky', '1', '0', '1 of 2 (release-1)', ''],
      ['dash.order', '7', '1', 'none', 'Stranded: no live process declares this version; its instances wait'],
      ['dash.order', '2', '1', '1 of 2 (release-2)', expect.stringContaining('Only 1 of 2 processes can run these')],
      ['dash.order', '1', '3', '1 of 2 (release-1)', expect.stringContaining('Only 1 of 2 processes can run these')],
    ]);
    expect(text).toContain('href="/workflows?workflow=dash.order&amp;version=1&amp;status=pending&amp;status=running');
    // The processes, oldest first, with what each declares; the crashed one is not among them.
    expect(text).toContain('<td class="id">release-1</td>');
    expect(text).toContain('<td>dash.flaky@1, dash.order@1</td>');
    expect(text).toContain('<td class="id">release-2</td>');
    expect(text).not.toContain('release-0');

    // The next beat of a live process (a manual clock's move beats at once) removes the stale row.
    clock.advance('1s');
    await expect
      .poll(async () => (await store.processes!(0)).map((p) => p.owner).sort())
      .toEqual(['release-1', 'release-2']);

    // The second release shuts down cleanly: its row goes at once, and its version's instance is stranded.
    await next.close();
    apps = apps.filter((app) => app !== next);
    const after = await versionRows(started.url);
    expect(after.text).toContain('1 live worker process recorded itself');
    expect(after.rows).toEqual([
      ['dash.flaky', '1', '0', '1 of 1 (release-1)', ''],
      ['dash.order', '7', '1', 'none', 'Stranded: no live process declares this version; its instances wait'],
      ['dash.order', '2', '1', 'none', 'Stranded: no live process declares this version; its instances wait'],
      ['dash.order', '1', '3', '1 of 1 (release-1)', ''],
    ]);
  });

  it('without process records in the store, shows what the serving process declares, saying so', async () => {
    const memory = new InMemoryWorkflowStore();
    // A store of one's own that keeps no process records.
    const store = Object.assign(Object.create(memory) as WorkflowStore, {
      recordProcess: undefined,
      removeProcess: undefined,
      processes: undefined,
    });
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const started = await startDashboardApp('express', { store, clock, worker: false }, { guard: false });
    apps.push(started.app);
    await started.app.get(WorkflowClient).start('dash.order', { order: 'o-1' }, { id: 'o-1' });
    await started.app.get(WorkflowWorker).drain();
    await memory.create({
      id: 'old-1',
      workflow: 'dash.order',
      version: 7,
      input: {},
      deadline: null,
      now: clock.now(),
    });

    const { rows, text } = await versionRows(started.url);
    expect(text).toContain('This store keeps no process records');
    expect(rows).toEqual([
      ['dash.flaky', '1', '0', 'this process', ''],
      ['dash.order', '7', '1', 'none', 'Stranded: no live process declares this version; its instances wait'],
      ['dash.order', '1', '1', 'this process', ''],
    ]);
    expect(text).not.toContain('Live worker processes');
  });
});
