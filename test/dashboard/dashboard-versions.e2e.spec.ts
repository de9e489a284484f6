// The dashboard's Versions page over HTTP: unfinished instances counted per workflow version, beside
// the versions this process declares, with a version nobody here declares called out.
import type { INestApplication } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryWorkflowStore, WorkflowClient, WorkflowWorker } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { startDashboardApp } from './dashboard-app.js';

let app: INestApplication | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('the Versions page', () => {
  it('counts unfinished instances per version and says which versions this process declares', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const started = await startDashboardApp('express', { store, clock, worker: false }, { guard: false });
    app = started.app;
    const client = app.get(WorkflowClient);
    for (const id of ['o-1', 'o-2', 'o-3']) await client.start('dash.order', { order: id }, { id });
    await client.start('dash.flaky', 1, { id: 'f-1' });
    await app.get(WorkflowWorker).drain(); // the orders wait for approval; the flaky one completes
    // An instance of a version no process here declares, as an older release left it.
    await store.create({
      id: 'old-1',
      workflow: 'dash.order',
      version: 7,
      input: { order: 'old' },
      deadline: null,
      now: clock.now(),
    });

    await client.pause('o-3'); // a paused one still counts: it is unfinished

    const response = await fetch(`${started.url}/workflows/versions`);
    expect(response.status).toBe(200);
    const text = (await response.text()).replace(/\s+/g, ' ');
    expect(text).toContain('aria-current="page">Versions</a>');
    const rows = [
      ...text.matchAll(/<tr> <td class="id">([^<]+)<\/td> <td>(\d+)<\/td> <td>(.*?)<\/td> <td>(.*?)<\/td> <\/tr>/g),
    ].map(([, workflow, version, count, declared]) => [
      workflow,
      Number(version),
      count!.replace(/<[^>]+>/g, ''),
      declared!.replace(/<[^>]+>/g, ''),
    ]);
    expect(rows).toEqual([
      ['dash.flaky', 1, '0', 'yes'],
      ['dash.order', 7, '1', 'no'],
      ['dash.order', 1, '3', 'yes'],
    ]);
    expect(text).toContain('href="/workflows?workflow=dash.order&amp;version=1&amp;status=pending&amp;status=running');
  });
});
