// The dashboard follows work that another OS process does, on PostgreSQL and on MariaDB: this
// process serves the dashboard (its worker off), a second one runs the workflow. An instance page
// and the list are open in headless Chromium; the signal the instance waits for is stored without
// this process's engine (the store's own signal()), the other process takes it and records a step,
// and both pages show it without a reload. The pages' own 5 s ping refresh is taken out of the
// browser (its listener is never registered), so only the dashboard's reads of the store can
// update them: before those, neither page ever changed.
import { spawn, type ChildProcess } from 'node:child_process';
import type { INestApplication } from '@nestjs/common';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, requireChromium } from '../support/chromium.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';
import { startDashboardApp } from './dashboard-app.js';

for (const kind of SQL_KINDS) {
  const ready =
    requireChromium('dashboard cross-process browser test') &&
    (await requireServer(kind, 'dashboard cross-process browser test'));
  describe.skipIf(!ready)(`dashboard in Chromium following another process (${SERVER[kind]})`, () => {
    const schema = freshSchema(kind, 'dashx');
    let target: SqlTarget;
    let app: INestApplication;
    let url: string;
    let worker: ChildProcess;
    let browser: Awaited<ReturnType<typeof launchChromium>>;

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      await target.store.init();
      ({ app, url } = await startDashboardApp('express', { store: target.store, worker: false }, { guard: false }));
      worker = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/dashboard-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      await new Promise<void>((resolve, reject) => {
        worker.once('exit', (code) => reject(new Error(`the worker process exited early with ${code}`)));
        worker.stdout!.on('data', (data: Buffer) => {
          if (data.toString().includes('ready')) resolve();
        });
      });
      browser = await launchChromium();
      // No ping refresh: the page's script registers its 'ping' listener into nothing.
      await browser.context.addInitScript(() => {
        const add = EventSource.prototype.addEventListener;
        EventSource.prototype.addEventListener = function (this: EventSource, type: string, ...rest: never[]) {
          if (type === 'ping') return;
          return (add as (...args: unknown[]) => void).call(this, type, ...rest);
        } as typeof add;
      });
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      if (worker && worker.exitCode === null && worker.signalCode === null) {
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.kill('SIGTERM');
        await exited;
      }
      await app?.close();
      await target?.close({ drop: true });
    });

    /** Opens `path` and waits until its live connection is open. */
    async function open(path: string): Promise<Page> {
      const page = await browser.context.newPage();
      await page.goto(`${url}${path}`);
      // "Live: ..." once connected, then "Updated at ..." once the refresh on connecting came back.
      await expect.poll(() => page.locator('#live-status').textContent()).toMatch(/^(Live: |Updated at )/);
      return page;
    }

    it("an instance page and the list show the other process's step without a reload", async () => {
      const id = `cross-${kind}`;
      await target.store.create({
        id,
        workflow: 'dash.cross',
        version: 1,
        input: null,
        deadline: null,
        now: Date.now(),
      });
      await expect.poll(async () => (await target.store.get(id))?.status, { timeout: 15_000 }).toBe('suspended');
      const instance = await open(`/workflows/instance?${new URLSearchParams({ id })}`);
      const list = await open('/workflows');
      // Read without waiting for the element (a locator's textContent() waits up to 30 s for it).
      const step = async () =>
        (await instance.locator('[data-live] li', { hasText: 'after-go' }).allTextContents()).join(' ');
      const row = async () => (await list.locator('tbody tr', { hasText: id }).allTextContents()).join(' ');
      expect(await step()).toBe('');
      expect(await row()).toContain('suspended');

      const sent = Date.now();
      await target.store.signal({ name: 'dash.cross.go', key: id, dedupeId: null, payload: null, now: sent });
      await expect.poll(step, { timeout: 15_000 }).toContain('completed');
      const shownAfter = Date.now() - sent;
      await expect.poll(row, { timeout: 15_000 }).toContain('completed');
      expect((await target.store.get(id))?.status).toBe('completed');
      // Seen, not asserted (the machine is shared): about a second, the poll's interval plus the worker's turn.
      console.log(
        `${SERVER[kind]}: the instance page showed the other process's step ${shownAfter} ms after the signal`,
      );
    }, 60_000);
  });
}
