import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec, InMemoryWorkflowStore } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';
import {
  createContractEngine,
  type ContractEngine,
  type ContractEngineOptions,
} from '../../src/testing/contract/contract-engine.js';
import {
  ENCRYPTION_WORKFLOWS,
  EncParent,
  EncSleep,
  MARK,
  expectNoPlaintext,
} from '../../src/testing/contract/encryption.contract.js';
import { dumpInMemoryStore } from '../support/in-memory-dump.js';

const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' });

const apps: ContractEngine[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

type CodecOptions = Pick<ContractEngineOptions, 'codec' | 'requireEncodedPayloads'>;

/** The engine (no Nest) on `store` with the encryption scenario's workflows and `options`. */
async function open(store: InMemoryWorkflowStore, clock: ManualWorkflowClock, options: CodecOptions) {
  const app = createContractEngine(store, { workflows: ENCRYPTION_WORKFLOWS, clock, ...options });
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
  it('without a codec stores payloads as they are (the scenario’s check sees them)', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const app = await open(store, clock, {});
    await app.client.start(EncSleep, { secret: `${MARK}-plain` }, { id: 'plain-order' });
    expect(() => expectNoPlaintext(dumpInMemoryStore(store), 'plain', expect)).toThrow();
  });

  it('rotation: with [new, old] it reads what the old key wrote and writes with the new one', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const before = await open(store, clock, { codec: k1 });
    await before.client.start(EncSleep, { secret: 'x' }, { id: 'rot' });
    await before.drain();
    await before.close();
    apps.length = 0;
    const record = storedRecord(store, 'rot');
    expect(String(record.instance.input)).toMatch(/^\$wfc1:k1:/);

    const after = await open(store, clock, { codec: [k2, k1] });
    clock.advance('1h');
    expect(await after.drain()).toBe(1);
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
    await plain.drain();
    await plain.close();
    apps.length = 0;

    const strict = await open(store, clock, { codec: k1, requireEncodedPayloads: true });
    clock.advance('1h');
    expect(await strict.drain()).toBe(0);
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
    expect(await lenient.drain()).toBe(2);
    expect(await lenient.client.getStatus('legacy-1')).toMatchObject({ status: 'completed', input: { secret: 'old' } });
  });

  it('a missing key hands the instance back without stopping the worker; it completes once the key is back', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const first = await open(store, clock, { codec: k1 });
    await first.client.start(EncSleep, { secret: 'keep' }, { id: 'orphan' });
    await first.drain();
    await first.close();
    apps.length = 0;

    // k1 removed too early: the instance can't be read, but others still run.
    const without = await open(store, clock, { codec: k2 });
    await without.client.start(EncSleep, { secret: 'other' }, { id: 'healthy' });
    clock.advance('1h');
    await without.drain();
    clock.advance('1h');
    await without.drain();
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
    expect(await restored.drain()).toBe(1);
    expect(await restored.client.getStatus('orphan')).toMatchObject({
      status: 'completed',
      output: { first: `${MARK}-first:keep` },
    });
  });

  it('refuses tampered ciphertext: the instance is handed back, never run on what was changed', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const app = await open(store, clock, { codec: k1 });
    await app.client.start(EncSleep, { secret: 's' }, { id: 'tampered' });
    await app.drain();
    const entry = storedEntry(store, 'tampered', 'first');
    const original = String(entry.value);
    const body = Buffer.from(original.slice('$wfc1:k1:'.length), 'base64');
    body[14]! ^= 0x01;
    entry.value = `$wfc1:k1:${body.toString('base64')}`;
    storedRecord(store, 'tampered').journal.set('first', JSON.stringify(entry));

    clock.advance('1h');
    expect(await app.drain()).toBe(1); // claimed (its input reads), then handed back at the journal
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
    expect(await app.drain()).toBe(1);
    expect(await app.client.getStatus('tampered')).toMatchObject({
      status: 'completed',
      output: { first: `${MARK}-first:s` },
    });
  });
});

describe('codec options', () => {
  const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const boot = (options: CodecOptions) => open(new InMemoryWorkflowStore(), clock, options);

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
    await without.drain();
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
    await restored.drain();
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
