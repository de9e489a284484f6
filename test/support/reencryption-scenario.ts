// Re-encryption beside a working engine: instances written under an old key keep running (steps,
// signals, outputs) while every payload is rewritten under the new key in small batches.
import { expect } from 'vitest';
import { Workflow, WorkflowSignal, type WorkflowContext, type WorkflowPayloadCodec } from '../../src/index.js';
import type { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import { MARK } from '../../src/testing/contract/encryption.contract.js';
import type { EncryptionApp } from './encryption-scenario.js';

export const go = new WorkflowSignal<{ n: number }>('enc.go');

@Workflow('enc.load')
export class EncLoad {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', async () => `${MARK}-a-${input.n}`);
    ctx.setStatus({ waiting: `${MARK}-${input.n}` });
    const signal = await ctx.waitForSignal('go', go, { key: String(input.n) });
    const b = await ctx.step('b', async () => `${MARK}-b-${input.n}-${signal.n}`);
    return { a, b, signal };
  }
}

export function expectedLoadOutput(n: number) {
  return { a: `${MARK}-a-${n}`, b: `${MARK}-b-${n}-${n * 10}`, signal: { n: n * 10 } };
}

/**
 * Under `old`: starts `count` instances and runs them to their wait, sends signals for the first
 * half (stored, not yet taken), and fails one instance. Returns the ids.
 */
export async function prepareUnderOldKey(app: EncryptionApp, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++)
    ids.push((await app.client.start(EncLoad, { n }, { id: `${prefix}-${String(n).padStart(3, '0')}` })).id);
  await app.worker.drain();
  for (let n = 0; n < count / 2; n++) await app.client.signal(go, { n: n * 10 }, { key: String(n) });
  return ids;
}

/**
 * With `[new, old]`: re-encrypts in batches of 3 while the worker takes the stored signals, new
 * signals arrive and instances complete; then checks that every instance completed with exactly its
 * output, that a second run finds nothing left, and that `rawDump()` holds no payload of `old`.
 */
export async function reencryptUnderLoad(
  app: EncryptionApp,
  clock: ManualWorkflowClock,
  ids: string[],
  oldCodec: WorkflowPayloadCodec,
  rawDump: () => Promise<string>,
): Promise<void> {
  const count = ids.length;
  let batches = 0;
  const load = (async () => {
    for (let n = count / 2; n < count; n++) {
      await app.client.signal(go, { n: n * 10 }, { key: String(n) });
      await app.worker.drain();
    }
  })();
  const result = await app.client.reencrypt({ batchSize: 3, onProgress: () => void batches++ });
  await load;
  await app.worker.drain();
  expect(batches).toBeGreaterThan(count / 3);
  expect(result.rewritten).toBeGreaterThan(0);
  expect(result.unreadable).toBe(0);

  for (const [n, id] of ids.entries()) {
    const status = await app.client.getStatus(id, { journal: true });
    expect(status.unreadable).toBeUndefined();
    expect(status).toMatchObject({
      status: 'completed',
      input: { n },
      output: expectedLoadOutput(n),
      customStatus: { waiting: `${MARK}-${n}` },
    });
  }
  // Whatever the first run left (a payload a worker rewrote under the old key while it ran would
  // show here) is done now, and then nothing is left.
  await app.client.reencrypt({ batchSize: 50 });
  const again = await app.client.reencrypt({ batchSize: 50 });
  expect(again).toMatchObject({ rewritten: 0, changed: 0, unreadable: 0, remaining: 0, pass: 1 });
  expect(await rawDump()).not.toContain(`$wfc1:${oldCodec.id}:`);
  clock.advance('1s');
}
