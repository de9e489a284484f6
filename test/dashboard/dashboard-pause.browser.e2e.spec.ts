// Operator control from the dashboard in a real browser (headless Chromium, one launch for the
// file) against a real Nest app on PostgreSQL with its background worker: pause and resume an
// instance from its page, pause and resume a workflow from the list filtered by it, run an
// instance again from a step of its timeline (a fork, confirmed), and bulk actions on the list's
// filter (the count, a confirmation, and the `all` confirmation for a filter that matches
// everything); the same guard and same-origin rule as every other action refuse a forged request.
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

describe.skipIf(!ready)('dashboard pauses, forks and bulk actions in Chromium (Express, PostgreSQL)', () => {
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
    for (const [action, body] of [
      ['fork', { id: 'p-1', step: 'reserve', confirmed: 'yes' }],
      ['bulk', { bulk: 'cancel', id: 'p-', confirmed: 'yes' }],
    ] as const) {
      for (const headers of forged) {
        const post = await fetch(`${url}/workflows/actions/${action}`, {
          method: 'POST',
          headers,
          body: new URLSearchParams(body),
          redirect: 'manual',
        });
        expect(post.status).toBe(403);
      }
    }
    expect(await client.list({ workflow: 'dash.order' })).toHaveLength(1);
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
  it('runs an instance again from a step of its timeline: asks first, then opens the fork, the source untouched', async () => {
    await client.start('dash.order', { order: 'o-9' }, { id: 'o-9' });
    await until(() => status('o-9'), 'suspended');
    const source = await client.getStatus('o-9', { journal: true });
    await page.goto(`${url}/workflows/instance?id=o-9`);
    await live().locator('li', { hasText: 'reserve' }).getByRole('button', { name: 'Run again from here' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain('Run again from reserve?');
    // Nothing is forked before the confirmation.
    expect(await client.list({ workflow: 'dash.order' })).toHaveLength(2);
    await page.getByRole('button', { name: 'Run again from reserve' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Forked');
    const forkId = new URL(page.url()).searchParams.get('id')!;
    expect(forkId).not.toBe('o-9');
    expect(await client.getStatus(forkId)).toMatchObject({
      workflow: 'dash.order',
      forkedFrom: { id: 'o-9', step: 'reserve' },
    });
    await until(() => status(forkId), 'suspended');
    expect(await client.getStatus('o-9', { journal: true })).toEqual(source);
    // A step that is not in the journal is refused with the reason, and nothing is forked.
    const refused = await page.request.post(`${url}/workflows/actions/fork`, {
      form: { id: 'o-9', step: 'no-such-step', confirmed: 'yes' },
      headers: { origin: url },
    });
    expect(refused.status()).toBe(400);
    expect(await refused.text()).toContain('no step');
    expect(await client.list({ workflow: 'dash.order' })).toHaveLength(3);
  });

  it('pauses, then resumes, every instance of the list filter from the bulk panel, after showing how many match', async () => {
    for (const id of ['bk-1', 'bk-2', 'bk-3']) await client.start('dash.order', { order: id }, { id });
    for (const id of ['bk-1', 'bk-2', 'bk-3']) await until(() => status(id), 'suspended');
    await page.goto(`${url}/workflows?id=bk-`);
    await page.locator('#bulk-action').selectOption('pause');
    await page.locator('#bulk-reason').fill('carrier down');
    await page.getByRole('button', { name: 'Review…' }).click();
    await expect.poll(() => page.locator('#bulk-count').textContent()).toContain('3 instances match');
    expect(await status('bk-1')).toBe('suspended');
    await page.getByRole('button', { name: 'Pause 3' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Pause: 3 of the 3');
    for (const id of ['bk-1', 'bk-2', 'bk-3'])
      expect(await client.getStatus(id)).toMatchObject({ status: 'paused', pauseReason: 'carrier down' });
    expect(await status('p-1')).not.toBe('paused');
    await page.locator('#bulk-action').selectOption('resume');
    await page.getByRole('button', { name: 'Review…' }).click();
    await page.getByRole('button', { name: 'Resume 3' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Resume: 3 of the 3');
    for (const id of ['bk-1', 'bk-2', 'bk-3']) expect(await status(id)).toBe('suspended');
  });

  it('asks for `all` before a bulk action on a filter that matches every instance, and then terminates them all', async () => {
    // Confirmed without `all`: refused, nothing changed.
    const refused = await page.request.post(`${url}/workflows/actions/bulk`, {
      form: { bulk: 'terminate', confirmed: 'yes' },
      headers: { origin: url },
    });
    expect(refused.status()).toBe(400);
    expect(await refused.text()).toContain('type all to confirm');
    expect(await status('bk-1')).toBe('suspended');
    await page.goto(`${url}/workflows`);
    await page.locator('#bulk-action').selectOption('terminate');
    await page.getByRole('button', { name: 'Review…' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('every instance');
    const all = await client.list({ limit: 1000 });
    await expect.poll(() => page.locator('#bulk-count').textContent()).toContain(`${all.length} instances match`);
    await page.locator('#bulk-all').fill('all');
    await page.getByRole('button', { name: `Terminate ${all.length}` }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Terminate:');
    for (const instance of await client.list({ limit: 1000 }))
      if (!['completed', 'failed', 'cancelled', 'compensation_failed'].includes(instance.status))
        expect(instance.terminateRequested, instance.id).toBe(true);
    await until(async () => (await client.list({ status: ['suspended', 'pending', 'running', 'paused'] })).length, 0);
  });
});
