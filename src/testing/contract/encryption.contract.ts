import { randomBytes } from 'node:crypto';
import { AesGcmPayloadCodec } from '../../codec/aes-gcm-payload.codec.js';
import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { WorkflowSignal } from '../../signals/workflow-signal.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite, WorkflowContractTestApi } from './contract-suite.js';

/** Every user-supplied value in the scenario contains this; no raw record may. */
export const MARK = 'SECRET';

export const delivered = new WorkflowSignal<{ at: string }>('enc.delivered');
const never = new WorkflowSignal<unknown>('enc.never');

@Workflow('enc.child')
export class EncChild {
  async run(_ctx: WorkflowContext, input: { secret: string }) {
    return { got: input.secret, extra: `${MARK}-child-output` };
  }
}

@Workflow('enc.order')
export class EncOrder {
  async run(ctx: WorkflowContext, input: { card: string; key: string }) {
    const charged = await ctx.step(
      'charge',
      async ({ attempt }) => {
        if (attempt === 1)
          throw Object.assign(new Error(`card ${input.card} declined (${MARK}-attempt)`), { detail: `${MARK}-detail` });
        return { receipt: `${MARK}-receipt` };
      },
      { retry: { attempts: 2, backoff: '1s' } },
    );
    ctx.setStatus({ stage: `${MARK}-stage` });
    const proof = await ctx.waitForSignal('delivery', delivered, { key: input.key });
    const child = await ctx.executeChild('child', EncChild, { secret: `${MARK}-child-input` });
    return { charged, proof, child, out: `${MARK}-output` };
  }
}

@Workflow('enc.fail')
export class EncFail {
  async run() {
    throw Object.assign(new Error(`${MARK}-failure`), { orderRef: `${MARK}-field` });
  }
}

@Workflow('enc.wait')
export class EncWait {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal('never', never);
  }
}

/** A step, a sleep, then an output: for the rotation and missing-key tests. */
@Workflow('enc.sleep')
export class EncSleep {
  async run(ctx: WorkflowContext, input: { secret: string }) {
    const first = await ctx.step('first', async () => `${MARK}-first:${input.secret}`);
    await ctx.sleep('nap', '1h');
    return { first, done: `${MARK}-done` };
  }
}

/** Starts its child (id `<parent id>/child`) and returns the child's output. */
@Workflow('enc.parent')
export class EncParent {
  async run(ctx: WorkflowContext) {
    return ctx.executeChild('child', EncChild, { secret: `${MARK}-child` });
  }
}

export const ENCRYPTION_WORKFLOWS = [EncChild, EncOrder, EncFail, EncWait, EncSleep, EncParent];

/**
 * Runs the scenario with ids under `prefix`, checking `rawDump()` (everything the store holds, as
 * text) after the first failed attempt and at the end, and checking that every read decodes.
 */
export async function runEncryptionScenario(
  engine: ContractEngine,
  prefix: string,
  rawDump: () => Promise<string>,
  expect: WorkflowContractTestApi['expect'],
): Promise<void> {
  const { client, clock } = engine;
  const order = await client.start(
    EncOrder,
    { card: `4242-${MARK}-card`, key: `${prefix}-k` },
    { id: `${prefix}-order` },
  );
  await engine.drain();
  // The failed first attempt's error sits in the journal now.
  const retrying = await order.status({ journal: true });
  expect(retrying.journal!.find((e) => e.name === 'charge')).toMatchObject({
    state: 'waiting',
    error: { name: 'Error', message: `card 4242-${MARK}-card declined (${MARK}-attempt)`, detail: `${MARK}-detail` },
  });
  expectNoPlaintext(await rawDump(), prefix, expect);

  clock.advance('1s');
  await engine.drain();
  expect(await order.status()).toMatchObject({ status: 'suspended', customStatus: { stage: `${MARK}-stage` } });
  await client.signal(delivered, { at: `${MARK}-signal` }, { key: `${prefix}-k` });
  await engine.drain();

  const fail = await client.start(EncFail, { why: `${MARK}-fail-input` }, { id: `${prefix}-fail` });
  const wait = await client.start(EncWait, null, { id: `${prefix}-wait` });
  await engine.drain();
  await client.cancel(wait.id, `${MARK}-reason`);
  await engine.drain();
  await engine.storage.schedules.saveSchedule({
    id: `${prefix}-schedule`,
    workflow: 'enc.order',
    declared: false,
    spec: { every: '1h' },
    input: { card: `${MARK}-schedule-input` },
    paused: false,
    wakeAt: null,
    state: {},
    expectRevision: null,
    releaseLease: false,
    now: clock.now(),
  });

  // Everything reads back decoded: status, journal, results, errors, children, events, lists.
  const done = await order.status({ journal: true, children: true });
  const output = {
    charged: { receipt: `${MARK}-receipt` },
    proof: { at: `${MARK}-signal` },
    child: { got: `${MARK}-child-input`, extra: `${MARK}-child-output` },
    out: `${MARK}-output`,
  };
  expect(done).toMatchObject({
    status: 'completed',
    input: { card: `4242-${MARK}-card` },
    output,
    customStatus: { stage: `${MARK}-stage` },
  });
  expect(done.unreadable).toBeUndefined();
  expect(done.journal!.find((e) => e.name === 'charge')?.value).toEqual({ receipt: `${MARK}-receipt` });
  expect(done.journal!.find((e) => e.name === 'delivery')?.value).toEqual({ at: `${MARK}-signal` });
  expect(done.children![0]).toMatchObject({
    input: { secret: `${MARK}-child-input` },
    output: { extra: `${MARK}-child-output` },
  });
  expect(await order.result()).toEqual(output);
  expect(engine.events.find((e) => e.type === 'workflow-completed' && e.id === order.id)).toMatchObject({ output });
  const failed = await fail.status();
  expect(failed).toMatchObject({
    status: 'failed',
    input: { why: `${MARK}-fail-input` },
    error: { name: 'Error', message: `${MARK}-failure`, orderRef: `${MARK}-field` },
  });
  expect(failed.error!.stack).toContain(`${MARK}-failure`);
  expect(engine.events.find((e) => e.type === 'workflow-failed' && e.id === fail.id)).toMatchObject({
    error: { message: `${MARK}-failure` },
  });
  expect(await wait.status()).toMatchObject({
    status: 'cancelled',
    error: { name: 'WorkflowCancelledError', message: `${MARK}-reason` },
  });
  expect((await engine.storage.schedules.getSchedule(`${prefix}-schedule`))?.input).toEqual({
    card: `${MARK}-schedule-input`,
  });
  const listed = await client.list({ workflow: 'enc.order' });
  expect(listed.find((i) => i.id === order.id)?.output).toEqual(output);

  expectNoPlaintext(await rawDump(), prefix, expect);
}

/** The raw records hold the ids (plain, as documented) and encoded payloads, and no marked value. */
export function expectNoPlaintext(dump: string, prefix: string, expect: WorkflowContractTestApi['expect']): void {
  expect(dump).toContain(`${prefix}-order`);
  expect(dump).toContain('$wfc1:');
  const at = dump.indexOf(MARK);
  if (at >= 0)
    throw new Error(
      `A user-supplied value is stored in plaintext: ...${dump.slice(Math.max(0, at - 200), at + 60)}...`,
    );
}

/**
 * Payload encryption: one run through everything a user hands the engine (inputs, step results and
 * their errors, custom statuses, signal payloads, children, outputs, failures, cancel reasons,
 * schedule inputs), each value marked, on an empty store whose whole content is then searched for
 * them. The store's part: it keeps every payload as the codec layer gave it, nowhere in plaintext.
 */
export function encryptionContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  const emptyStore = suite.emptyStore;
  if (!emptyStore) {
    describe.skip('payload encryption (needs the emptyStore option)', () => {
      it('is skipped', () => undefined);
    });
    return;
  }
  describe('payload encryption', () => {
    const engines = contractEngines(suite);

    it('stores no user-supplied value in plaintext, and every read decodes', async () => {
      const empty = await emptyStore();
      const dump = requireDump(empty.dump);
      const codec = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'enc' });
      const engine = engines.open({ workflows: ENCRYPTION_WORKFLOWS, codec }, empty.store);
      await runEncryptionScenario(engine, 'enc', dump, expect);
    });
  });
}

/** The empty store's `dump()`, which the scenarios that search the store's content need. */
export function requireDump(dump: (() => Promise<string>) | undefined): () => Promise<string> {
  if (!dump) {
    throw new TypeError(
      "The store contract's emptyStore option returned no dump(): the encryption scenarios read everything the store holds through it.",
    );
  }
  return dump;
}
