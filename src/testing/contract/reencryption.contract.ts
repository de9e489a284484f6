import { randomBytes } from 'node:crypto';
import { AesGcmPayloadCodec } from '../../codec/aes-gcm-payload.codec.js';
import { PayloadCodecChain } from '../../codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../../codec/workflow-payload-codec.js';
import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { WorkflowSignal } from '../../signals/workflow-signal.js';
import { WorkflowStorage } from '../../storage/workflow-storage.js';
import type { WorkflowScheduleQuery, WorkflowStore } from '../../storage/workflow-store.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite, WorkflowContractTestApi } from './contract-suite.js';
import { MARK, requireDump } from './encryption.contract.js';

/** AES-GCM, but every encode and decode waits a turn of the event loop: re-encryption then interleaves with the worker at every payload. */
export class SlowCodec implements WorkflowPayloadCodec {
  private readonly inner: AesGcmPayloadCodec;
  constructor(readonly id: string) {
    this.inner = new AesGcmPayloadCodec({ key: randomBytes(32), id });
  }
  async encode(value: string) {
    await new Promise((resolve) => setImmediate(resolve));
    return this.inner.encode(value);
  }
  async decode(value: string) {
    await new Promise((resolve) => setImmediate(resolve));
    return this.inner.decode(value);
  }
}

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
export async function prepareUnderOldKey(engine: ContractEngine, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++)
    ids.push((await engine.client.start(EncLoad, { n }, { id: `${prefix}-${String(n).padStart(3, '0')}` })).id);
  await engine.drain();
  for (let n = 0; n < count / 2; n++) await engine.client.signal(go, { n: n * 10 }, { key: String(n) });
  return ids;
}

/**
 * With `[new, old]`: re-encrypts in batches of 3 while the worker takes the stored signals, new
 * signals arrive and instances complete; then checks that every instance completed with exactly its
 * output, that a second run finds nothing left, and that `rawDump()` holds no payload of `old`.
 */
export async function reencryptUnderLoad(
  engine: ContractEngine,
  ids: string[],
  oldCodec: WorkflowPayloadCodec,
  rawDump: () => Promise<string>,
  expect: WorkflowContractTestApi['expect'],
): Promise<void> {
  const count = ids.length;
  let batches = 0;
  const load = (async () => {
    for (let n = count / 2; n < count; n++) {
      await engine.client.signal(go, { n: n * 10 }, { key: String(n) });
      await engine.drain();
    }
  })();
  const result = await engine.client.reencrypt({ batchSize: 3, onProgress: () => void batches++ });
  await load;
  await engine.drain();
  expect(batches).toBeGreaterThan(count / 3);
  expect(result.rewritten).toBeGreaterThan(0);
  expect(result.unreadable).toBe(0);

  for (const [n, id] of ids.entries()) {
    const status = await engine.client.getStatus(id, { journal: true });
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
  await engine.client.reencrypt({ batchSize: 50 });
  const again = await engine.client.reencrypt({ batchSize: 50 });
  expect(again).toMatchObject({ rewritten: 0, changed: 0, unreadable: 0, remaining: 0, pass: 1 });
  expect(await rawDump()).not.toContain(`$wfc1:${oldCodec.id}:`);
  engine.clock.advance('1s');
}

const T = Date.parse('2026-01-01T00:00:00Z');

function storageWith(store: WorkflowStore, ...codecs: AesGcmPayloadCodec[]): WorkflowStorage {
  return new WorkflowStorage(store, { codecs: new PayloadCodecChain({ codecs, allowUnencoded: false }) });
}

/**
 * Three schedules under the old key; re-encryption reads them one per page, and another process
 * deletes the first (already rewritten) before the second page is read. With pages by offset, the
 * second page started one schedule too far on: the second schedule was never read, and the run
 * still said nothing was left. Every schedule left must be readable with the new key alone.
 */
export async function scheduleDeletedBetweenPages(
  store: WorkflowStore,
  expect: WorkflowContractTestApi['expect'],
): Promise<void> {
  const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'race-old' });
  const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'race-new' });
  const old = storageWith(store, k1);
  for (const id of ['race-a', 'race-b', 'race-c']) {
    const saved = await old.schedules.saveSchedule({
      id,
      workflow: 'race.flow',
      declared: false,
      spec: { every: 3_600_000 },
      input: { secret: id },
      paused: false,
      wakeAt: null,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: T,
    });
    expect(saved).not.toBeNull();
  }

  let pages = 0;
  const racing = new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'listSchedules') return Reflect.get(target, property, receiver) as unknown;
      return async (query: WorkflowScheduleQuery) => {
        // Between the first page (race-a, rewritten by now) and the second: an operator deletes race-a.
        if (pages++ === 1) expect(await target.deleteSchedule('race-a')).toBe(true);
        return target.listSchedules(query);
      };
    },
  });
  const result = await storageWith(racing, k2, k1).reencrypt({ batchSize: 1 }, () => T + 1);
  expect(pages).toBeGreaterThan(1);
  expect(result).toMatchObject({ unreadable: 0, remaining: 0 });

  // Done, it said: the old key can go. Then every schedule left reads with the new key alone.
  const fresh = storageWith(store, k2);
  for (const id of ['race-b', 'race-c']) expect((await fresh.schedules.getSchedule(id))?.input).toEqual({ secret: id });
}

/**
 * Re-encryption after a key rotation, on an empty store of its own (it reads and rewrites every
 * payload of the store): beside a working engine, and against an operator's write between its
 * pages. What the run reports as done must be done. The store's part: `rewritePayloads()`,
 * `listSignals()` and `rewriteSignalPayload()`, and schedule pages that start after the last one read.
 */
export function reencryptionContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  const emptyStore = suite.emptyStore;
  if (!emptyStore) {
    describe.skip('re-encryption (needs the emptyStore option)', () => {
      it('is skipped', () => undefined);
    });
    return;
  }
  describe('re-encryption', () => {
    const engines = contractEngines(suite);

    it('re-encrypts under load: instances written under the old key run on beside it, nothing is lost, no old payload is left', async () => {
      const empty = await emptyStore();
      const dump = requireDump(empty.dump);
      const k1 = new SlowCodec('load-old');
      const k2 = new SlowCodec('load-new');
      const before = engines.open({ workflows: [EncLoad], codec: k1 }, empty.store);
      const ids = await prepareUnderOldKey(before, 'load', 30);
      await before.close();
      const after = engines.open({ workflows: [EncLoad], codec: [k2, k1], clock: before.clock }, empty.store);
      await reencryptUnderLoad(after, ids, k1, dump, expect);
    });

    it('reads every schedule when one it already rewrote is deleted before the next page', async () => {
      const empty = await emptyStore();
      await scheduleDeletedBetweenPages(empty.store, expect);
    });
  });
}
