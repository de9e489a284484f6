import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { AesGcmPayloadCodec, InMemoryWorkflowStore, Workflow, type WorkflowContext } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import {
  EncParent,
  EncSleep,
  MARK,
  dumpInMemoryStore,
  encryptionApp,
  expectNoPlaintext,
  runEncryptionScenario,
  type EncryptionApp,
} from '../support/encryption-scenario.js';

const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' });

const apps: EncryptionApp[] = [];
// The engine logs each payload it can't read, which these tests cause on purpose: captured, and
// asserted on (only that kind may be logged; each test checks its own subjects).
let errors: MockInstance;
const UNREADABLE = / holds a payload no configured codec can read; handed back/;
/** Who was reported unreadable so far (`Instance "x" (wf@1)`, `Schedule "s"`), in order, without repeats. */
const unreadable = () => [...new Set(errors.mock.calls.map((call) => String(call[0]).split(' holds a payload')[0]!))];
beforeEach(() => {
  errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
});
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  const logged = errors.mock.calls.map((call) => String(call[0]));
  errors.mockRestore();
  expect(logged.filter((line) => !UNREADABLE.test(line))).toEqual([]);
});

async function open(
  store: InMemoryWorkflowStore,
  clock: ManualWorkflowClock,
  options: Parameters<typeof encryptionApp>[2],
) {
  const app = await encryptionApp(store, clock, options);
  apps.push(app);
  return app;
}

/** The in-memory store's record of one instance (its journal entries as JSON text), to change what is stored behind the engine's back. */
function storedRecord(store: InMemoryWorkflowStore, id: string) {
  return (
    store as unknown as { instances: Map<string, { instance: Record<string, unknown>; journal: Map<string, string> }> }
  ).instances.get(id)!;
}

/** One journal entry as the in-memory store holds it. */
function storedEntry(store: InMemoryWorkflowStore, id: string, name: string): Record<string, unknown> {
  return JSON.parse(storedRecord(store, id).journal.get(name)!) as Record<string, unknown>;
}

describe('payload encryption on the in-memory store', () => {
  it('stores no user-supplied value in plaintext, and every read decodes', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const app = await open(store, clock, { codec: k1 });
    await runEncryptionScenario(app, clock, 'mem', async () => dumpInMemoryStore(store));
  });

  it('without a codec stores payloads as they are (the scenario’s check sees them)', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const app = await open(store, clock, {});
    await app.client.start(EncSleep, { secret: `${MARK}-plain` }, { id: 'plain-order' });
    expect(() => expectNoPlaintext(dumpInMemoryStore(store), 'plain')).toThrow();
  });

  it('rotation: with [new, old] it reads what the old key wrote and writes with the new one', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const before = await open(store, clock, { codec: k1 });
    await before.client.start(EncSleep, { secret: 'x' }, { id: 'rot' });
    await before.worker.drain();
    await before.close();
    apps.length = 0;
    const record = storedRecord(store, 'rot');
    expect(String(record.instance.input)).toMatch(/^\$wfc1:k1:/);

    const after = await open(store, clock, { codec: [k2, k1] });
    clock.advance('1h');
    expect(await after.worker.drain()).toBe(1);
    const status = await after.client.getStatus('rot', { journal: true });
    expect(status).toMatchObject({
      status: 'completed',
      input: { secret: 'x' },
      output: { first: `${MARK}-first:x`, done: `${MARK}-done` },
    });
    expect(String(record.instance.input)).toMatch(/^\$wfc1:k1:/); // untouched until re-encryption
    expect(String(storedRecord(store, 'rot').instance.output)).toMatch(/^\$wfc1:k2:/);
    expect(String(storedEntry(store, 'rot', 'first').value)).toMatch(/^\$wfc1:k1:/);
  });

  it('reads payloads stored before any codec as they are, and refuses them with requireEncodedPayloads', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const plain = await open(store, clock, {});
    await plain.client.start(EncSleep, { secret: 'old' }, { id: 'legacy-1' });
    await plain.client.start(EncSleep, { secret: 'old' }, { id: 'legacy-2' });
    await plain.worker.drain();
    await plain.close();
    apps.length = 0;

    const strict = await open(store, clock, { codec: k1, requireEncodedPayloads: true });
    clock.advance('1h');
    expect(await strict.worker.drain()).toBe(0);
    const refused = await strict.client.getStatus('legacy-1');
    expect(refused.input).toBeUndefined();
    expect(refused.unreadable).toMatchObject({
      codecIds: [null],
      reason: expect.stringMatching(/requireEncodedPayloads/),
    });
    await strict.close();
    apps.length = 0;

    const lenient = await open(store, clock, { codec: k1 });
    clock.advance('1m');
    expect(await lenient.worker.drain()).toBe(2);
    expect(await lenient.client.getStatus('legacy-1')).toMatchObject({ status: 'completed', input: { secret: 'old' } });
    expect(unreadable()).toEqual(['Instance "legacy-1" (enc.sleep@1)', 'Instance "legacy-2" (enc.sleep@1)']);
  });

  it('a missing key hands the instance back without stopping the worker; it completes once the key is back', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const first = await open(store, clock, { codec: k1 });
    await first.client.start(EncSleep, { secret: 'keep' }, { id: 'orphan' });
    await first.worker.drain();
    await first.close();
    apps.length = 0;

    // k1 removed too early: the instance can't be read, but others still run.
    const without = await open(store, clock, { codec: k2 });
    await without.client.start(EncSleep, { secret: 'other' }, { id: 'healthy' });
    clock.advance('1h');
    await without.worker.drain();
    clock.advance('1h');
    await without.worker.drain();
    expect((await without.client.getStatus('healthy')).status).toBe('completed');
    const stuck = await without.client.getStatus('orphan', { journal: true });
    expect(stuck.status).not.toBe('failed');
    expect(stuck.input).toBeUndefined();
    expect(stuck.unreadable).toMatchObject({
      codecIds: ['k1'],
      reason: expect.stringMatching(/codec "k1", which is not configured.*Add codec "k1" back/),
    });
    expect(stuck.unreadable!.fields).toEqual(expect.arrayContaining(['input', 'journal.first.value']));
    expect(stuck.wakeAt).toBeGreaterThan(clock.now());
    await without.close();
    apps.length = 0;

    const restored = await open(store, clock, { codec: [k2, k1] });
    clock.advance('1m');
    expect(await restored.worker.drain()).toBe(1);
    expect(await restored.client.getStatus('orphan')).toMatchObject({
      status: 'completed',
      output: { first: `${MARK}-first:keep` },
    });
    expect(unreadable()).toEqual(['Instance "orphan" (enc.sleep@1)']);
  });

  it('refuses tampered ciphertext: the instance is handed back, never run on what was changed', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const app = await open(store, clock, { codec: k1 });
    await app.client.start(EncSleep, { secret: 's' }, { id: 'tampered' });
    await app.worker.drain();
    const entry = storedEntry(store, 'tampered', 'first');
    const original = String(entry.value);
    const body = Buffer.from(original.slice('$wfc1:k1:'.length), 'base64');
    body[14]! ^= 0x01;
    entry.value = `$wfc1:k1:${body.toString('base64')}`;
    storedRecord(store, 'tampered').journal.set('first', JSON.stringify(entry));

    clock.advance('1h');
    expect(await app.worker.drain()).toBe(1); // claimed (its input reads), then handed back at the journal
    const status = await app.client.getStatus('tampered', { journal: true });
    expect(status.status).not.toBe('completed');
    expect(status.unreadable).toMatchObject({
      codecIds: ['k1'],
      fields: ['journal.first.value'],
      reason: expect.stringMatching(/failed authentication/),
    });
    expect(status.journal!.find((e) => e.name === 'first')!.value).toBeUndefined();

    storedRecord(store, 'tampered').journal.set('first', JSON.stringify({ ...entry, value: original }));
    clock.advance('1m');
    expect(await app.worker.drain()).toBe(1);
    expect(await app.client.getStatus('tampered')).toMatchObject({
      status: 'completed',
      output: { first: `${MARK}-first:s` },
    });
    expect(unreadable()).toEqual(['Instance "tampered" (enc.sleep@1)']);
  });
});

describe('codec options', () => {
  const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const boot = (options: Parameters<typeof encryptionApp>[2]) => open(new InMemoryWorkflowStore(), clock, options);

  it('refuses what is not a codec, an empty list, shared ids and requireEncodedPayloads without a codec', async () => {
    await expect(boot({ codec: { encode: () => '' } as never })).rejects.toThrow(
      /option "codec": pass a WorkflowPayloadCodec/,
    );
    await expect(boot({ codec: [k1, 'nope' as never] })).rejects.toThrow(/option "codec\[1\]"/);
    await expect(boot({ codec: [] })).rejects.toThrow(/the list is empty/);
    await expect(boot({ codec: [k1, new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' })] })).rejects.toThrow(
      /two codecs share the id "k1"/,
    );
    await expect(boot({ requireEncodedPayloads: true })).rejects.toThrow(/"requireEncodedPayloads" needs a "codec"/);
    await expect(boot({ codec: k1, requireEncodedPayloads: 'yes' as never })).rejects.toThrow(
      /"requireEncodedPayloads": use true or false/,
    );
  });

  it('creates a codec given as a class through Nest, so it can inject what holds its key', async () => {
    class EnvCodec extends AesGcmPayloadCodec {
      constructor() {
        super({ key: Buffer.alloc(32, 7), id: 'env' });
      }
    }
    const app = await boot({ codec: EnvCodec });
    expect(app.storage.codecs?.current.id).toBe('env');
  });
});

describe('unreadable payloads beyond the claim', () => {
  it('a child created earlier under a missing key hands the parent back instead of failing it', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    // As if a crashed execution of the parent had created its child under k1 before recording it.
    const first = await open(store, clock, { codec: k1 });
    await first.storage.create({
      id: 'parent/child',
      workflow: 'enc.child',
      version: 1,
      input: { secret: `${MARK}-child` },
      parentId: 'parent',
      parentClose: 'cancel',
      deadline: null,
      wakeAt: clock.now() + 3_600_000,
      now: clock.now(),
    });
    await first.close();
    apps.length = 0;

    const without = await open(store, clock, { codec: k2 });
    await without.client.start(EncParent, null, { id: 'parent' });
    await without.worker.drain();
    const parent = await without.client.getStatus('parent', { journal: true });
    expect(parent.status).toBe('running');
    expect(parent.error).toBeNull();
    expect(parent.journal!.find((e) => e.name === 'child')).toBeUndefined();
    expect((await without.client.getStatus('parent/child')).unreadable).toMatchObject({
      codecIds: ['k1'],
      fields: ['input'],
    });
    await without.close();
    apps.length = 0;

    const restored = await open(store, clock, { codec: [k2, k1] });
    clock.advance('1h');
    await restored.worker.drain();
    expect(await restored.client.getStatus('parent')).toMatchObject({
      status: 'completed',
      output: { got: `${MARK}-child`, extra: `${MARK}-child-output` },
    });
  });

  it('a schedule whose input can’t be read is released for later, not handed to the scheduler', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const first = await open(store, clock, { codec: k1 });
    const now = clock.now();
    await first.storage.schedules.saveSchedule({
      id: 'nightly',
      workflow: 'enc.sleep',
      declared: false,
      spec: { every: '1d' },
      input: { secret: MARK },
      paused: false,
      wakeAt: now,
      state: { n: 1 },
      expectRevision: null,
      releaseLease: false,
      now,
    });
    const claimRequest = (token: string) => ({
      owner: 'w',
      token,
      now: clock.now(),
      leaseUntil: clock.now() + 30_000,
      limit: 10,
      workflows: ['enc.sleep'],
    });
    const without = await open(store, clock, { codec: k2 });
    expect(await without.storage.schedules.claimSchedules(claimRequest('t1'))).toEqual([]);
    expect(await without.storage.schedules.getSchedule('nightly').catch((e: Error) => e.name)).toBe(
      'WorkflowPayloadError',
    );
    const raw = await store.getSchedule('nightly');
    expect(raw).toMatchObject({ leaseToken: null, wakeAt: now + 60_000, state: { n: 1 } });
    clock.advance('1m');
    const both = await open(store, clock, { codec: [k2, k1] });
    expect(await both.storage.schedules.claimSchedules(claimRequest('t2'))).toMatchObject([
      { id: 'nightly', input: { secret: MARK } },
    ]);
  });
});

@Workflow('enc.declared', {
  schedules: [{ id: 'declared-nightly', every: '1d', input: { report: `${MARK}-declared` } }],
})
class EncDeclared {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

describe('declared schedules under a removed key', () => {
  it('startup does not fail: the declared schedule, from the code, replaces what no codec can read; run-time reads still refuse', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const first = await encryptionApp(store, clock, { codec: k1 }, [EncDeclared]);
    expect(String((await store.getSchedule('declared-nightly'))!.input)).toMatch(/^\$wfc1:k1:/);
    await first.close();

    const second = await encryptionApp(store, clock, { codec: k2 }, [EncDeclared]);
    apps.push(second);
    expect(String((await store.getSchedule('declared-nightly'))!.input)).toMatch(/^\$wfc1:k2:/);
    expect((await second.storage.schedules.getSchedule('declared-nightly'))?.input).toEqual({
      report: `${MARK}-declared`,
    });
    clock.advance('1d');
    await second.worker.drain();
    expect((await second.client.list({ scheduleId: 'declared-nightly' }))[0]).toMatchObject({
      status: 'completed',
      output: { report: `${MARK}-declared` },
    });

    // A run-time schedule under the removed key: reading it for a change refuses, and nothing is lost.
    await second.storage.schedules.saveSchedule({
      id: 'runtime',
      workflow: 'enc.declared',
      declared: false,
      spec: { every: 86_400_000 },
      input: { x: 1 },
      paused: false,
      wakeAt: null,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: clock.now(),
    });
    const stored = await store.getSchedule('runtime');
    await store.saveSchedule({
      ...stored!,
      input: String(stored!.input).replace('$wfc1:k2:', '$wfc1:k1:'),
      expectRevision: stored!.revision,
      releaseLease: false,
      now: clock.now(),
    });
    await expect(second.storage.schedules.getSchedule('runtime')).rejects.toThrow(
      /codec "k1", which is not configured/,
    );
    expect(await second.storage.schedules.getSchedule('runtime', { readable: true })).toMatchObject({
      input: undefined,
      unreadable: { codecIds: ['k1'], fields: ['input'] },
    });
  });
});
