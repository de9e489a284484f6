// The dashboard on the SQLite store: its list and instance pages read the file (the journal
// included), and its actions (cancel) write to it.
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowsDashboardModule } from '../../src/dashboard/index.js';
import { Workflow, WorkflowClient, WorkflowsModule, WorkflowWorker, type WorkflowContext } from '../../src/index.js';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';

@Injectable()
@Workflow('dash.sqlite')
class Waiting {
  async run(ctx: WorkflowContext, input: { order: string }) {
    await ctx.step('reserve', () => ({ reserved: input.order }));
    return ctx.waitForSignal('approval', 'order.approved', { key: input.order });
  }
}

describe('the dashboard on SqliteWorkflowStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-sqlite-dashboard-'));
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    @Module({
      imports: [
        WorkflowsModule.forRoot({ store: new SqliteWorkflowStore({ path: join(dir, 'dash.db') }), worker: false }),
        WorkflowsDashboardModule.forRoot(),
      ],
      providers: [Waiting],
    })
    class DashboardApp {}
    app = await NestFactory.create(DashboardApp, { logger: false });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists instances, shows one with its journal, and cancels it', async () => {
    const client = app.get(WorkflowClient);
    await client.start(Waiting, { order: 'o-1' }, { id: 'dash-o-1' });
    await app.get(WorkflowWorker).drain();

    const list = await fetch(`${url}/workflows`);
    expect(list.status).toBe(200);
    expect(await list.text()).toContain('href="/workflows/instance?id=dash-o-1"');
    const page = await (await fetch(`${url}/workflows/instance?id=dash-o-1`)).text();
    expect(page).toContain('reserve');
    expect(page).toContain('suspended');

    const cancelled = await fetch(`${url}/workflows/actions/cancel`, {
      method: 'POST',
      body: new URLSearchParams({ id: 'dash-o-1' }),
      headers: { origin: url, 'sec-fetch-site': 'same-origin' },
      redirect: 'manual',
    });
    expect(cancelled.status).toBeLessThan(400);
    await app.get(WorkflowWorker).drain();
    expect((await client.getStatus('dash-o-1')).status).toBe('cancelled');
  });
});
