// `npm run example:drafts` driven over HTTP and in Chromium: a POST starts the workflow, the words
// its step streams arrive over SSE (and on the page) while it still runs, and a second request
// completes its approval callback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, requireChromium } from '../support/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-drafts-'));
let child: ChildProcess;
let url: string;

/** Each SSE event's type and JSON data, with the time it arrived, until `end`. */
async function events(path: string): Promise<Array<{ type: string; data: Record<string, string> | null; at: number }>> {
  const response = await fetch(`${url}${path}`, { headers: { accept: 'text/event-stream' } });
  const found: Array<{ type: string; data: Record<string, string> | null; at: number }> = [];
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const type =
        lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim() ?? 'message';
      const data = JSON.parse(lines.find((l) => l.startsWith('data:'))!.slice(5)) as Record<string, string> | null;
      found.push({ type, data, at: Date.now() });
      if (type === 'end') return found;
    }
  }
  return found;
}

const post = (path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'examples/drafts/main.ts'], {
    env: { ...process.env, PORT: '0', DRAFTS_DB: join(dir, 'drafts.sqlite') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the example exited with ${code}`)));
    child.stdout!.on('data', (data: Buffer) => {
      const found = /listening on (\S+)/.exec(data.toString());
      if (found) resolve(found[1]!);
    });
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the drafts example', () => {
  it('streams the words over SSE while the workflow runs, then completes on the approval request', async () => {
    const { id } = (await (await post('/drafts', { topic: 'checkout', delay: 40 })).json()) as { id: string };
    const all = await events(`/drafts/${id}/out`);
    const words = all.filter((e) => e.data?.word).map((e) => e.data?.word);
    expect(words.join(' ')).toContain('Durable workflows let a checkout survive');
    expect(all.filter((e) => e.data?.word).at(-1)!.at - all[0]!.at).toBeGreaterThan(words.length * 20);
    const approve = all.find((e) => e.data?.approve)!.data!.approve!;
    // The approval link is streamed before the wait that takes it commits its suspension.
    let status = '';
    for (let i = 0; i < 100 && status !== 'suspended'; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      status = ((await (await fetch(`${url}/drafts/${id}`)).json()) as { status: string }).status;
    }
    expect(status).toBe('suspended');
    expect((await post(approve, { by: 'ann' })).status).toBe(200);
    expect((await post(approve, { by: 'ann' })).status).toBe(409);
    for (let i = 0; i < 100; i++) {
      const draft = (await (await fetch(`${url}/drafts/${id}`)).json()) as { status: string; output: unknown };
      if (draft.status === 'completed') {
        expect(draft.output).toEqual({ text: words.join(' '), approvedBy: 'ann' });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the draft did not complete after its approval');
  }, 60_000);

  it.skipIf(!requireChromium('drafts example'))(
    'shows the words in the browser as they arrive, before the workflow ends, and its approval',
    async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.context.newPage();
        await page.goto(url);
        await page.getByRole('button', { name: 'Write a draft' }).click();
        await page.locator('#words').filter({ hasText: 'Durable' }).waitFor({ timeout: 20_000 });
        // The first words are on the page while the model is still writing the last ones.
        expect(await page.locator('#words').textContent()).not.toContain('live');
        expect(await page.locator('#status').textContent()).toBe('writing');
        await page.locator('#words').filter({ hasText: 'reaches the browser live' }).waitFor({ timeout: 20_000 });
        await page.getByRole('button', { name: 'Approve' }).click();
        await page.locator('#status').filter({ hasText: 'approved by the browser' }).waitFor({ timeout: 20_000 });
      } finally {
        await browser.close();
      }
    },
    90_000,
  );
});
