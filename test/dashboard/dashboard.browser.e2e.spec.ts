// The dashboard in a real browser (headless Chromium) against a real Nest app on PostgreSQL with
// its background worker: list, filter, page, open an instance, watch it advance live, send a
// signal, cancel, retry; and the guard refuses a request without the session cookie.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { WorkflowClient, WorkflowSchedules } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { launchChromium, requireChromium } from '../support/chromium.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { CookieGuard, startDashboardApp, Switches } from './dashboard-app.js';

const ready = requireChromium('dashboard browser tests') && (await requirePostgres('dashboard browser tests'));
// DASHBOARD_SCREENSHOTS=1 writes the screenshots docs/dashboard.md shows; otherwise they go to a temporary folder.
const shots =
  process.env.DASHBOARD_SCREENSHOTS === '1'
    ? join(process.cwd(), 'docs')
    : join(process.cwd(), 'node_modules/.cache/dashboard-shots');

describe.skipIf(!ready)('dashboard in Chromium (Express, PostgreSQL)', () => {
  const schema = freshSchemaName('dash');
  const pool = createPool({ max: 4 });
  const clock = new ManualWorkflowClock(new Date('2026-03-02T09:00:00Z'));
  let app: INestApplication;
  let url: string;
  let client: WorkflowClient;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  const status = async (id: string) => (await client.getStatus(id)).status;
  /** Waits (15 s at most) until `what` resolves to `want`; usable in hooks, where expect.poll is not. */
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
    mkdirSync(shots, { recursive: true });
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    ({ app, url } = await startDashboardApp(
      'express',
      { store, clock, worker: { pollInterval: '200ms' } },
      { guard: CookieGuard, pageSize: 5 },
    ));
    client = app.get(WorkflowClient);
    for (const order of ['o-1', 'o-2', 'o-3']) {
      await client.start('dash.order', { order, note: `<img src=x onerror="window.__xss=1"> ${order}` }, { id: order });
      clock.advance('1s');
    }
    for (let n = 1; n <= 4; n += 1) {
      await client.start('dash.flaky', n, { id: `f-${n}` });
      clock.advance('1s');
    }
    for (const id of ['o-1', 'o-2', 'o-3']) await until(() => status(id), 'suspended');
    for (let n = 1; n <= 4; n += 1) await until(() => status(`f-${n}`), 'failed');
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

  it('the guard refuses requests without the session cookie: pages, live updates and actions', async () => {
    expect((await fetch(`${url}/workflows`)).status).toBe(403);
    expect((await fetch(`${url}/workflows/instance?id=o-1`)).status).toBe(403);
    expect((await fetch(`${url}/workflows/events`)).status).toBe(403);
    const post = await fetch(`${url}/workflows/actions/cancel`, {
      method: 'POST',
      body: new URLSearchParams({ id: 'o-3' }),
      redirect: 'manual',
    });
    expect(post.status).toBe(403);
    expect(await status('o-3')).toBe('suspended');
    expect((await fetch(`${url}/workflows`, { headers: { cookie: 'ops=letmein' } })).status).toBe(200);
  });

  it('lists newest first, pages by keyset and filters by status and id prefix', async () => {
    await page.goto(`${url}/workflows`);
    const ids = () => page.locator('tbody td.id a').allTextContents();
    expect(await ids()).toEqual(['f-4', 'f-3', 'f-2', 'f-1', 'o-3']);
    await page.getByRole('link', { name: 'Older →' }).click();
    expect(await ids()).toEqual(['o-2', 'o-1']);
    await page.getByRole('link', { name: '← Newer' }).click();
    expect(await ids()).toEqual(['f-4', 'f-3', 'f-2', 'f-1', 'o-3']);

    await page.getByLabel('suspended').check();
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(page.url()).toContain('status=suspended');
    expect(await ids()).toEqual(['o-3', 'o-2', 'o-1']);
    await page.getByLabel('Id starts with').fill('o-2');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await ids()).toEqual(['o-2']);
    await page.goto(`${url}/workflows?workflow=dash.flaky&status=failed`);
    expect(await ids()).toEqual(['f-4', 'f-3', 'f-2', 'f-1']);
    await page.goto(`${url}/workflows?version=abc`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Version "abc" is not a version');
    await page.goto(`${url}/workflows`);
    await page.screenshot({ path: join(shots, 'dashboard-list.png'), fullPage: true });
  });

  it('opens an instance, sends the signal it waits for, and watches it advance without a reload', async () => {
    await page.goto(`${url}/workflows`);
    await page.getByRole('link', { name: 'Older →' }).click();
    await page.getByRole('link', { name: 'o-1', exact: true }).click();
    await expect.poll(() => page.locator('h1').textContent()).toContain('o-1');
    // Payloads are shown escaped: the input's markup is text, never run.
    await expect.poll(() => page.locator('#input-title + pre').textContent()).toContain('<img src=x onerror=');
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    await expect
      .poll(() => live().locator('li', { hasText: 'reserve' }).textContent())
      .toContain('completed after 1 attempt');
    await expect
      .poll(() => live().locator('li', { hasText: 'approval' }).textContent())
      .toContain('waiting for signal order.approved with key o-1');

    await page.getByLabel('Payload (JSON)').first().fill('{"by": "alice"}');
    await page.getByRole('button', { name: 'Send signal' }).first().click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Signal sent.');
    await page.evaluate(() => ((globalThis as { __same?: boolean }).__same = true));

    // The worker takes the signal; the page's live region follows by itself.
    await expect
      .poll(() => live().locator('li', { hasText: 'approval' }).textContent(), { timeout: 15_000 })
      .toContain('woken by signal');
    await expect
      .poll(() => live().locator('li', { hasText: 'cool-off' }).textContent(), { timeout: 15_000 })
      .toContain('sleeping until');
    clock.advance('1h');
    await expect
      .poll(() => live().locator('#instance-status').textContent(), { timeout: 15_000 })
      .toContain('completed');
    await expect.poll(() => live().locator('#output-title + pre').textContent()).toContain('"shipped": "o-1"');
    // The action forms follow the status too: a completed instance can't be cancelled any more.
    await expect.poll(() => page.getByRole('button', { name: 'Cancel instance' }).count()).toBe(0);
    await expect.poll(() => page.getByRole('button', { name: 'Delete instance' }).count()).toBe(1);
    expect(await page.evaluate(() => (globalThis as { __same?: boolean }).__same)).toBe(true);
    await page.screenshot({ path: join(shots, 'dashboard-instance.png'), fullPage: true });
  });

  it('cancels a waiting instance, which runs its compensations and ends cancelled', async () => {
    await page.goto(`${url}/workflows/instance?id=o-2`);
    await page.getByLabel('Reason').first().fill('customer asked');
    await page.getByRole('button', { name: 'Cancel instance' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Cancel requested');
    await until(() => status('o-2'), 'cancelled');
    await expect
      .poll(() => live().locator('#instance-status').textContent(), { timeout: 15_000 })
      .toContain('cancelled');
    await expect.poll(() => live().textContent()).toContain('WorkflowCancelledError');
  });

  it('retries a failed instance, which then completes', async () => {
    app.get(Switches).fail = false;
    await page.goto(`${url}/workflows/instance?id=f-2`);
    await expect.poll(() => live().textContent()).toContain('the switch is on');
    await page.getByRole('button', { name: 'Retry instance' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Retry requested');
    await until(() => status('f-2'), 'completed');
    await expect
      .poll(() => live().locator('#instance-status').textContent(), { timeout: 15_000 })
      .toContain('completed');
    await expect.poll(() => live().locator('#output-title + pre').textContent()).toBe('4');
    // A second retry of a completed instance is refused with the client's reason, and nothing changes.
    const refused = await fetch(`${url}/workflows/actions/retry`, {
      method: 'POST',
      headers: { cookie: 'ops=letmein', origin: url },
      body: new URLSearchParams({ id: 'f-2' }),
      redirect: 'manual',
    });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('only failed, cancelled or compensation_failed instances can be retried');
  });
  it('pauses, resumes and triggers a schedule from the schedules page', async () => {
    await app.get(WorkflowSchedules).upsert('hourly-report', { workflow: 'dash.flaky', every: '1h', input: 5 });
    await page.goto(`${url}/workflows`);
    await page.getByRole('link', { name: 'Schedules' }).click();
    const row = page.locator('tr', { hasText: 'hourly-report' });
    await expect.poll(() => row.textContent()).toContain('active');
    await page.getByRole('button', { name: 'Pause schedule hourly-report' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Schedule paused');
    await expect.poll(() => row.textContent()).toContain('paused');
    await page.getByRole('button', { name: 'Resume schedule hourly-report' }).click();
    await expect.poll(() => row.textContent()).toContain('active');
    await page.screenshot({ path: join(shots, 'dashboard-schedules.png'), fullPage: true });
    await page.getByRole('button', { name: 'Trigger now schedule hourly-report' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toContain('hourly-report@');
    await expect
      .poll(() => live().locator('#instance-status').textContent(), { timeout: 15_000 })
      .toContain('completed');
  });
  it('the list page shows a new instance by itself', async () => {
    await page.goto(`${url}/workflows`);
    await page.evaluate(() => ((globalThis as { __list?: boolean }).__list = true));
    await client.start('dash.order', { order: 'o-live' }, { id: 'o-live' });
    await expect.poll(() => page.locator('tbody td.id a').first().textContent(), { timeout: 15_000 }).toBe('o-live');
    expect(await page.evaluate(() => (globalThis as { __list?: boolean }).__list)).toBe(true);
  });
});
