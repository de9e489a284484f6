// Pausing from the dashboard in a real browser (headless Chromium) against a real Nest app on
// PostgreSQL with its background worker: pause and resume an instance from its page, pause and
// resume a workflow from the list filtered by it; the same guard and same-origin rule as every
// other action refuse a forged request.
import type { INestApplication } from '@nestjs/common';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { WorkflowClient } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { launchChromium, requireChromium } from '../support/chromium.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { CookieGuard, startDashboardApp, Switches } from './dashboard-app.js';

const ready =
  requireChromium('dashboard pause browser tests') && (await requirePostgres('dashboard pause browser tests'));

describe.skipIf(!ready)('dashboard pauses in Chromium (Express, PostgreSQL)', () => {
  const schema = freshSchemaName('dashpause');
  const pool = createPool({ max: 4 });
  const clock = new ManualWorkflowClock(new Date('2026-03-02T09:00:00Z'));
  let app: INestApplication;
  let url: string;
  let client: WorkflowClient;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  const status = async (id: string) => (await client.getStatus(id)).status;
  const until = async (what: () => Promise<unknown>, want: unknown) => {
    const deadline = Date.now() + 15_000;
    let last: unknown;
    while (Date.now() < deadline) {
      last = await what();
      if (last === want) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`Still ${JSON.stringify(last)} after 15 s; expected ${JSON.stringify(want)}.`);
  };
  const live = () => page.locator('[data-live]');

  beforeAll(async () => {
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    ({ app, url } = await startDashboardApp(
      'express',
      { store, clock, worker: { pollInterval: '200ms' } },
      { guard: CookieGuard, pageSize: 5 },
    ));
    client = app.get(WorkflowClient);
    app.get(Switches).fail = false;
    await client.start('dash.order', { order: 'p-1' }, { id: 'p-1' });
    await until(() => status('p-1'), 'suspended');
    browser = await launchChromium();
    await browser.context.addCookies([{ name: 'ops', value: 'letmein', url }]);
    page = await browser.context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await dropSchema(pool, schema).catch(() => undefined);
    await pool.end();
  });

  it('refuses a pause posted from another origin, or without the session cookie, and pauses nothing', async () => {
    const forged: Array<Record<string, string>> = [
      { cookie: 'ops=letmein', origin: 'http://evil.example' },
      { origin: url },
    ];
    for (const headers of forged) {
      const post = await fetch(`${url}/workflows/actions/pause`, {
        method: 'POST',
        headers,
        body: new URLSearchParams({ id: 'p-1' }),
        redirect: 'manual',
      });
      expect(post.status).toBe(403);
    }
    const workflow = await fetch(`${url}/workflows/actions/pause-workflow`, {
      method: 'POST',
      headers: { cookie: 'ops=letmein', origin: 'http://evil.example' },
      body: new URLSearchParams({ workflow: 'dash.order' }),
      redirect: 'manual',
    });
    expect(workflow.status).toBe(403);
    expect(await status('p-1')).toBe('suspended');
    expect(await client.pausedWorkflows()).toEqual([]);
  });

  it('pauses an instance from its page (the signal it gets meanwhile is kept), then resumes it', async () => {
    await page.goto(`${url}/workflows/instance?id=p-1`);
    await page.locator('#pause-reason').fill('checking the order');
    await page.getByRole('button', { name: 'Pause instance' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Paused');
    await expect.poll(() => live().locator('#instance-status').textContent()).toContain('paused');
    expect(await client.getStatus('p-1')).toMatchObject({ status: 'paused', pauseReason: 'checking the order' });
    await client.signal('order.approved', { by: 'ops' }, { key: 'p-1' });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await status('p-1')).toBe('paused');
    await page.reload();
    await page.getByRole('button', { name: 'Resume instance' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Resumed');
    // It takes the signal it was sent while paused, charges and goes to sleep.
    await expect
      .poll(async () => (await client.getStatus('p-1', { journal: true })).journal?.some((e) => e.name === 'charge'), {
        timeout: 15_000,
      })
      .toBe(true);
  });

  it('pauses a workflow from the list filtered by it: its new instances wait until it is resumed', async () => {
    await page.goto(`${url}/workflows?workflow=dash.flaky`);
    await page.locator('#pause-workflow-reason').fill('a fix ships');
    await page.getByRole('button', { name: 'Pause workflow' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Workflow paused');
    expect(await client.pausedWorkflows()).toMatchObject([
      { workflow: 'dash.flaky', version: null, reason: 'a fix ships' },
    ]);
    await client.start('dash.flaky', 3, { id: 'fl-1' });
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await status('fl-1')).toBe('pending');
    await page.reload();
    await page.getByRole('button', { name: 'Resume workflow' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Workflow resumed');
    await until(() => status('fl-1'), 'completed');
    expect(await client.pausedWorkflows()).toEqual([]);
  });
});
