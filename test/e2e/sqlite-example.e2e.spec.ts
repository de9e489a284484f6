// `npm run example` on its SQLite file: killed (SIGKILL) in the middle and run again, it carries on
// where it was and every order ends as the example expects.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-example-'));
const env = { ...process.env, ORDERS_DB: join(dir, 'orders.sqlite') };

/** Runs the example; with `killAt`, kills it once its output shows that text. */
async function runExample(killAt?: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'examples/orders/main.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (data: Buffer) => {
    output += data.toString();
    if (killAt !== undefined && output.includes(killAt)) child.kill('SIGKILL');
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

describe('the example on SQLite', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('carries on after a kill in the middle, every order ending as expected', async () => {
    const killed = await runExample('"stage":"cooling-off"');
    expect(killed.code).toBeNull();
    expect(killed.output).not.toContain('ended as expected');

    const resumed = await runExample();
    expect(resumed.output).toContain('Carrying on from the last run');
    expect(resumed.output).toContain('All 3 orders ended as expected');
    expect(resumed.code).toBe(0);

    // Run once more: the last run finished, so it starts over and finishes again.
    const again = await runExample();
    expect(again.output).toContain('starting over');
    expect(again.code).toBe(0);
  }, 60_000);
});
