// The dashboard over plain HTTP on both adapters (Express and Fastify), on the in-memory store with
// a manual clock and no background worker: status codes, headers, escaping, CSRF refusals,
// read-only mode, bad input, and a global prefix.
import { Logger, type INestApplication } from '@nestjs/common';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { InMemoryWorkflowStore, WorkflowClient, WorkflowSchedules, WorkflowWorker } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { CookieGuard, startDashboardApp, type Adapter } from './dashboard-app.js';
import type { WorkflowsDashboardOptions } from '../../src/dashboard/index.js';

let app: INestApplication | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function boot(adapter: Adapter, dashboard: WorkflowsDashboardOptions = {}, prefix?: string) {
  const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const started = await startDashboardApp(
    adapter,
    { store: new InMemoryWorkflowStore(), clock, worker: false },
    dashboard,
    prefix,
  );
  app = started.app;
  const client = app.get(WorkflowClient);
  const worker = app.get(WorkflowWorker);
  await client.start('dash.order', { order: 'x-1', note: '</pre><script>alert("owned")</script>' }, { id: 'x-1' });
  await worker.drain();
  return { url: started.url, client, worker, clock };
}

const post = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', body: new URLSearchParams(form), headers, redirect: 'manual' });

describe('a dashboard without a guard', () => {
  const unguarded = (spy: MockInstance) =>
    spy.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('without a guard'));

  it('warns once at startup, naming its path and how to give one or decline it; not with a guard or guard: false', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await boot('express', { path: '/ops' });
      expect(unguarded(warn)).toEqual([
        'WorkflowsDashboardModule is served at /ops without a guard: unless a global guard covers it, anyone who can ' +
          'reach the app can read every instance (inputs, outputs, errors) and cancel, terminate, retry or delete it. ' +
          'Pass `guard: YourGuard`, or `guard: false` when a global guard or the network already protects it.',
      ]);
      for (const guard of [CookieGuard, false] as const) {
        await app!.close();
        warn.mockClear();
        await boot('express', { guard });
        expect(unguarded(warn)).toEqual([]);
      }
    } finally {
      warn.mockRestore();
    }
  });
});

describe.each(['express', 'fastify'] as const)('dashboard over HTTP (%s)', (adapter) => {
  it('lists the signals nobody has taken by name and key with their age; a taken one is not there', async () => {
    const { url, client, worker, clock } = await boot(adapter);
    await client.signal('order.approved', { by: 'ops' }, { key: 'x-1' });
    await worker.drain(); // dash.order x-1 takes it
    await client.signal('order.aproved', { by: 'ops' }, { key: 'x-1' }); // misspelt: woken 0, nobody ever takes it
    clock.advance('2h');
    const page = await fetch(`${url}/workflows/signals`);
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('<h1>Signals nobody has taken</h1>');
    expect(body).toContain('aria-current="page">Signals</a>');
    const rows = [
      ...body.matchAll(/<tr>\n<td class="id">([^<]*)<\/td>\n<td class="id">([^<]*)<\/td>\n<td>([^<]*)<\/td>/g),
    ];
    expect(rows.map(([, name, key, age]) => [name, key, age])).toEqual([['order.aproved', 'x-1', '2 h']]);
  });

  it('serves the pages as HTML with a strict Content-Security-Policy, and every payload escaped', async () => {
    const { url } = await boot(adapter);
    const list = await fetch(`${url}/workflows`);
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(list.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(list.headers.get('x-frame-options')).toBe('DENY');
    expect(await list.text()).toContain('href="/workflows/instance?id=x-1"');
    const instance = await fetch(`${url}/workflows/instance?id=x-1`);
    const body = await instance.text();
    expect(instance.status).toBe(200);
    // JSON.stringify's backslashes stay; every markup character is an entity.
    expect(body).toContain(
      '&quot;note&quot;: &quot;&lt;/pre&gt;&lt;script&gt;alert(\\&quot;owned\\&quot;)&lt;/script&gt;&quot;',
    );
    expect(body).not.toContain('<script>alert');
    // The only script a page loads is the dashboard's own.
    expect(body.match(/<script\b[^>]*>/g)).toEqual(['<script src="/workflows/assets/dashboard.js" defer>']);
    const script = await fetch(`${url}/workflows/assets/dashboard.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain('EventSource');
  });

  it('answers 404 for an unknown instance, 400 for bad filters (escaped) and for a missing id', async () => {
    const { url } = await boot(adapter);
    const missing = await fetch(`${url}/workflows/instance?id=${encodeURIComponent('<b>nope</b>')}`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('No instance has the id &quot;&lt;b&gt;nope&lt;/b&gt;&quot;');
    const bad = await fetch(
      `${url}/workflows?version=${encodeURIComponent('<i>2</i>')}&status=sleeping&from=yesterday`,
    );
    expect(bad.status).toBe(400);
    const text = await bad.text();
    expect(text).toContain('Version &quot;&lt;i&gt;2&lt;/i&gt;&quot; is not a version');
    expect(text).toContain('Unknown status &quot;sleeping&quot;');
    expect(text).toContain('&quot;yesterday&quot; is not a time');
    expect((await fetch(`${url}/workflows/instance`)).status).toBe(400);
    expect((await fetch(`${url}/workflows?after=garbage`)).status).toBe(400);
  });

  it('shows a confirmation only for the codes an action sends, not for names every object has', async () => {
    const { url } = await boot(adapter);
    for (const page of ['/workflows', '/workflows/instance?id=x-1', '/workflows/schedules']) {
      for (const code of ['constructor', 'toString', '__proto__']) {
        const text = await (await fetch(`${url}${page}${page.includes('?') ? '&' : '?'}done=${code}`)).text();
        expect(text).not.toContain('role="status">function');
        expect(text).not.toContain('[object Object]');
        expect(text).not.toContain('class="notice ok"');
      }
    }
  });

  it('acts on same-origin posts and refuses cross-site ones, changing nothing', async () => {
    const { url, client, worker } = await boot(adapter);
    const cancel = `${url}/workflows/actions/cancel`;
    const evil = await post(cancel, { id: 'x-1' }, { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(await evil.text()).toContain('a request from origin https://evil.example');
    const crossSite = await post(
      cancel,
      { id: 'x-1' },
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect((await client.getStatus('x-1')).cancelRequested).toBe(false);

    const ok = await post(cancel, { id: 'x-1', reason: 'ops' }, { origin: url, 'sec-fetch-site': 'same-origin' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/workflows/instance?id=x-1&done=cancel');
    await worker.drain();
    expect((await client.getStatus('x-1')).status).toBe('cancelled');
    expect(await fetch(`${url}/workflows/instance?id=x-1&done=cancel`).then((r) => r.text())).toContain(
      'Cancel requested',
    );
    expect((await fetch(cancel)).status).toBe(404);
  });

  it('refuses a post from the plain-http origin of a dashboard served over https, and from look-alike, other-port and null origins', async () => {
    const { url, client } = await boot(adapter);
    const cancel = `${url}/workflows/actions/cancel`;
    const host = new URL(url).host;
    // A browser without Sec-Fetch-Site (Safari before 16.4) sends only Origin: a page on
    // http://<host> (a network attacker can forge any plain-http page) is not the https dashboard.
    const downgraded = await post(cancel, { id: 'x-1' }, { origin: `http://${host}`, 'x-forwarded-proto': 'https' });
    expect(downgraded.status).toBe(403);
    expect(await downgraded.text()).toContain(`a request from origin http://${host}`);
    for (const origin of [
      'null',
      `http://${host}.evil.example`,
      `http://evil.example#${host}`,
      `http://127.0.0.1:1`,
      `http://localhost:${new URL(url).port}`,
    ]) {
      expect((await post(cancel, { id: 'x-1' }, { origin })).status).toBe(403);
    }
    expect((await post(cancel, { id: 'x-1' }, { origin: url, 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await client.getStatus('x-1')).cancelRequested).toBe(false);
    // The same page over https acts.
    const secure = await post(cancel, { id: 'x-1' }, { origin: `https://${host}`, 'x-forwarded-proto': 'https' });
    expect(secure.status).toBe(303);
    expect((await client.getStatus('x-1')).cancelRequested).toBe(true);
  });

  it('renders ids, keys and signal payloads with markup, quotes, javascript: and U+2028 inert', async () => {
    const { url, client, worker } = await boot(adapter);
    const nasty = `javascript:alert(1)//"'><script>x</script>\u2028<img src=x onerror=alert(2)>`;
    await client.start('dash.order', { order: nasty }, { id: nasty });
    await worker.drain();
    await client.signal('order.approved', { by: nasty }, { key: nasty });
    await worker.drain();
    for (const path of ['/workflows', `/workflows/instance?id=${encodeURIComponent(nasty)}`]) {
      const response = await fetch(`${url}${path}`);
      expect(response.status).toBe(200);
      const body = await response.text();
      expect(body).not.toContain('<script>x');
      expect(body).not.toContain('<img');
      // In a value attribute it is only text; a link, a source or a form target never starts with it.
      expect(body).not.toMatch(/(href|src|action)="javascript:/i);
      expect(body).toContain('javascript:alert(1)//&quot;&#39;&gt;&lt;script&gt;x&lt;/script&gt;');
      expect(body.match(/<script\b[^>]*>/g)).toEqual(['<script src="/workflows/assets/dashboard.js" defer>']);
    }
  });

  it('sends a signal from the form; a payload that is not JSON is refused with a 400 and sends nothing', async () => {
    const { url, client, worker } = await boot(adapter);
    const signal = `${url}/workflows/actions/signal`;
    const bad = await post(signal, { id: 'x-1', name: 'order.approved', key: 'x-1', payload: '{by: alice}' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('The payload is not JSON');
    await worker.drain();
    expect((await client.getStatus('x-1')).status).toBe('suspended');

    const ok = await post(signal, { id: 'x-1', name: 'order.approved', key: 'x-1', payload: '{"by": "bob"}' });
    expect(ok.status).toBe(303);
    await worker.drain();
    const journal = (await client.getStatus('x-1', { journal: true })).journal!;
    expect(journal.find((e) => e.name === 'approval')).toMatchObject({ state: 'completed', value: { by: 'bob' } });
  });

  it('refuses an action the state does not allow with 409 and the reason, and an unknown action with 404', async () => {
    const { url } = await boot(adapter);
    const retry = await post(`${url}/workflows/actions/retry`, { id: 'x-1' });
    expect(retry.status).toBe(409);
    expect(await retry.text()).toContain('Could not retry: Instance &quot;x-1&quot; is suspended');
    const unknown = await post(`${url}/workflows/actions/explode`, { id: 'x-1' });
    expect(unknown.status).toBe(404);
    const gone = await post(`${url}/workflows/actions/cancel`, { id: 'nobody' });
    expect(gone.status).toBe(404);
  });

  it('in readOnly mode shows no forms and refuses every action with 403', async () => {
    const { url, client } = await boot(adapter, { readOnly: true });
    const body = await (await fetch(`${url}/workflows/instance?id=x-1`)).text();
    expect(body).not.toContain('<form method="post"');
    expect(body).toContain('Read-only dashboard');
    expect(body).not.toContain('Run again from here');
    expect(await (await fetch(`${url}/workflows`)).text()).not.toContain('Act on every match');
    const refused = await post(`${url}/workflows/actions/terminate`, { id: 'x-1' });
    expect(refused.status).toBe(403);
    for (const [action, form] of [
      ['fork', { id: 'x-1', step: 'reserve', confirmed: 'yes' }],
      ['bulk', { bulk: 'terminate', id: 'x-', confirmed: 'yes' }],
    ] as const)
      expect((await post(`${url}/workflows/actions/${action}`, form)).status).toBe(403);
    expect((await client.getStatus('x-1')).terminateRequested).toBe(false);
    expect(await client.list({ limit: 100 })).toHaveLength((await client.list({ idPrefix: 'x-' })).length);
  });

  it("serves under its path and the app's global prefix, with links that include both", async () => {
    const { url } = await boot(adapter, { path: 'ops/workflows/', trustedOrigins: ['https://ops.example.com'] }, 'api');
    const list = await fetch(`${url}/api/ops/workflows`);
    expect(list.status).toBe(200);
    const text = await list.text();
    expect(text).toContain('href="/api/ops/workflows/instance?id=x-1"');
    expect(text).toContain('href="/api/ops/workflows/assets/dashboard.css"');
    const trusted = await post(
      `${url}/api/ops/workflows/actions/cancel`,
      { id: 'x-1' },
      { origin: 'https://ops.example.com', 'sec-fetch-site': 'cross-site' },
    );
    expect(trusted.status).toBe(303);
    expect(trusted.headers.get('location')).toBe('/api/ops/workflows/instance?id=x-1&done=cancel');
  });
  it('mounted at the root path, links and redirects lead to the list, not to the current page', async () => {
    const { url, worker } = await boot(adapter, { path: '/' });
    const filtered = await (await fetch(`${url}/?status=suspended`)).text();
    expect(filtered).toContain('href="/instance?id=x-1"');
    // "Clear" and the header's link go to the unfiltered list (an empty href would keep the filters).
    expect(filtered).not.toContain('href=""');
    expect(filtered).toContain('<a href="/">Clear</a>');
    await post(`${url}/actions/terminate`, { id: 'x-1' });
    await worker.drain();
    const deleted = await post(`${url}/actions/delete`, { id: 'x-1' });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/?done=delete');
    expect(await (await fetch(new URL(deleted.headers.get('location')!, url))).text()).toContain('Instance deleted.');
  });

  it('lists schedules, and pauses, resumes and triggers one; unknown ones get a 404', async () => {
    const { url } = await boot(adapter);
    const schedules = app!.get(WorkflowSchedules);
    await schedules.upsert('<b>nightly</b>', { workflow: 'dash.flaky', every: '1h', input: 7 });
    const page = await fetch(`${url}/workflows/schedules`);
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('&lt;b&gt;nightly&lt;/b&gt;');
    expect(text).toContain('every 1 h;');
    expect(text).toContain('aria-label="Pause schedule &lt;b&gt;nightly&lt;/b&gt;"');

    const pause = await post(`${url}/workflows/actions/pause-schedule`, { schedule: '<b>nightly</b>' });
    expect(pause.status).toBe(303);
    expect(pause.headers.get('location')).toBe('/workflows/schedules?done=pause-schedule');
    expect((await schedules.get('<b>nightly</b>'))?.paused).toBe(true);
    expect(await (await fetch(`${url}/workflows/schedules?done=pause-schedule`)).text()).toContain('Schedule paused');
    const resume = await post(`${url}/workflows/actions/resume-schedule`, { schedule: '<b>nightly</b>' });
    expect(resume.status).toBe(303);
    expect((await schedules.get('<b>nightly</b>'))?.paused).toBe(false);

    const trigger = await post(`${url}/workflows/actions/trigger-schedule`, { schedule: '<b>nightly</b>' });
    expect(trigger.status).toBe(303);
    const location = trigger.headers.get('location')!;
    expect(location).toMatch(/^\/workflows\/instance\?id=%3Cb%3Enightly%3C%2Fb%3E%40.+&done=trigger-schedule$/);
    const id = new URLSearchParams(location.split('?')[1]).get('id')!;
    expect((await app!.get(WorkflowClient).getStatus(id)).scheduleId).toBe('<b>nightly</b>');
    expect(await (await fetch(`${url}${location}`)).text()).toContain('Schedule triggered');

    expect((await post(`${url}/workflows/actions/pause-schedule`, { schedule: 'nope' })).status).toBe(404);
    expect((await post(`${url}/workflows/actions/pause-schedule`, {})).status).toBe(400);
  });

  it('in readOnly mode shows schedules without actions and refuses schedule actions', async () => {
    const { url } = await boot(adapter, { readOnly: true });
    await app!.get(WorkflowSchedules).upsert('hourly', { workflow: 'dash.flaky', every: '1h', input: 1 });
    const text = await (await fetch(`${url}/workflows/schedules`)).text();
    expect(text).toContain('hourly');
    expect(text).not.toContain('<form method="post"');
    expect((await post(`${url}/workflows/actions/pause-schedule`, { schedule: 'hourly' })).status).toBe(403);
    expect((await app!.get(WorkflowSchedules).get('hourly'))?.paused).toBe(false);
  });
});

describe('dashboard over HTTP, a request line with an absolute URL (express)', () => {
  it('puts only the path of the request into links and redirects, never another host', async () => {
    const { url } = await boot('express');
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(url).port), '127.0.0.1', () => socket.write(request));
        let data = '';
        socket.on('data', (chunk) => (data += chunk));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
    const page = await raw(
      'GET http://evil.example/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    );
    expect(page).toContain('href="/workflows/assets/dashboard.css"');
    expect(page).not.toContain('evil.example');
    const body = 'id=x-1';
    const acted = await raw(
      `POST http://evil.example/workflows/actions/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(acted).toMatch(/^HTTP\/1\.1 303/);
    expect(acted).toContain('Location: /workflows/instance?id=x-1&done=cancel');
  });
});
