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
  EncFail,
  EncSleep,
  EncWait,
  MARK,
  expectNoPlaintext,
} from '../../src/testing/contract/encryption.contract.js';
import { dumpInMemoryStore } from '../support/in-memory-dump.js';

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

async function reopen(
  app: ContractEngine,
  store: InMemoryWorkflowStore,
  clock: ManualWorkflowClock,
  options: CodecOptions,
) {
  await app.close();
  apps.splice(apps.indexOf(app), 1);
  return open(store, clock, options);
}

describe('re-encryption on the in-memory store', () => {
  it('rewrites every payload an old key wrote (instances, journals, errors, reasons, signals, schedules); the old key can then go', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' });
    let app = await open(store, clock, { codec: k1 });
    await app.client.start(EncSleep, { secret: `${MARK}-a` }, { id: 'r-order' });
    await app.client.start(EncFail, { why: MARK }, { id: 'r-fail' });
    await app.client.start(EncWait, null, { id: 'r-wait' });
    await app.drain();
    await app.client.cancel('r-wait', `${MARK}-reason`);
    await app.drain();
    await app.storage.schedules.saveSchedule({
      id: 'r-schedule',
      workflow: 'enc.sleep',
      declared: false,
      spec: { every: '1h' },
      input: { secret: MARK },
      paused: false,
      wakeAt: null,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: clock.now(),
    });
    const signal = await app.client.signal('enc.unclaimed', { secret: MARK }, { key: 'x' });

    app = await reopen(app, store, clock, { codec: [k2, k1] });
    const progress: string[] = [];
    const result = await app.client.reencrypt({ batchSize: 2, onProgress: (p) => progress.push(p.phase) });
    expect(result).toMatchObject({
      pass: 1,
      phase: 'done',
      changed: 0,
      unreadable: 0,
      remaining: 0,
      read: { instances: 3, schedules: 1 },
    });
    expect(result.read.signals).toBeGreaterThanOrEqual(1);
    expect(result.cursor.signal).toBeGreaterThanOrEqual(signal.id);
    expect(progress).toEqual(expect.arrayContaining(['instances', 'signals', 'schedules', 'done']));
    const dump = dumpInMemoryStore(store);
    expect(dump).not.toContain('$wfc1:k1:');
    expectNoPlaintext(dump, 'r', expect);

    // Only the new key now: everything reads, and the sleeping instance finishes.
    app = await reopen(app, store, clock, { codec: k2 });
    clock.advance('1h');
    await app.drain();
    expect(await app.client.getStatus('r-order')).toMatchObject({
      status: 'completed',
      input: { secret: `${MARK}-a` },
      output: { first: `${MARK}-first:${MARK}-a` },
    });
    expect(await app.client.getStatus('r-fail')).toMatchObject({
      error: { message: `${MARK}-failure`, orderRef: `${MARK}-field` },
    });
    expect(await app.client.getStatus('r-wait')).toMatchObject({ error: { message: `${MARK}-reason` } });
    expect((await app.storage.schedules.getSchedule('r-schedule'))?.input).toEqual({ secret: MARK });
    // Run again: nothing left to do, and nothing is written.
    expect(await app.client.reencrypt()).toMatchObject({ rewritten: 0, remaining: 0 });
  });

  it('encodes what was stored before any codec, so requireEncodedPayloads can then be turned on', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    let app = await open(store, clock, {});
    await app.client.start(EncSleep, { secret: `${MARK}-legacy` }, { id: 'legacy-order' });
    await app.drain();
    app = await reopen(app, store, clock, { codec: k1 });
    expect((await app.client.reencrypt()).remaining).toBe(0);
    expectNoPlaintext(dumpInMemoryStore(store), 'legacy', expect);
    app = await reopen(app, store, clock, { codec: k1, requireEncodedPayloads: true });
    clock.advance('1h');
    await app.drain();
    expect(await app.client.getStatus('legacy-order')).toMatchObject({
      status: 'completed',
      input: { secret: `${MARK}-legacy` },
    });
  });

  it('reports what it cannot read (a codec missing from the list) and leaves it as it is', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    const k2 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' });
    let app = await open(store, clock, { codec: k1 });
    await app.client.start(EncSleep, { secret: 'x' }, { id: 'lost-key' });
    await app.drain();
    app = await reopen(app, store, clock, { codec: k2 });
    const result = await app.client.reencrypt();
    expect(result.unreadable).toBe(2); // the input and the step's value
    expect(result.remaining).toBe(2);
    expect(dumpInMemoryStore(store)).toContain('$wfc1:k1:');
  });

  it('refuses to run without a codec, and resumes from a cursor', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    let app = await open(store, clock, {});
    await expect(app.client.reencrypt()).rejects.toThrow(/needs a codec/);
    for (let i = 0; i < 5; i++) await app.client.start(EncSleep, { secret: `plain-${i}` }, { id: `resume-${i}` });
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    app = await reopen(app, store, clock, { codec: k1 });
    await expect(app.client.reencrypt({ batchSize: 0 })).rejects.toThrow(/"batchSize": 0/);
    const stop = new AbortController();
    const first = await app.client.reencrypt({ batchSize: 2, signal: stop.signal, onProgress: () => stop.abort() });
    expect(first.read.instances).toBe(2);
    expect(first.cursor.instance?.id).toBe('resume-1');
    const rest = await app.client.reencrypt({ batchSize: 2, resumeFrom: first.cursor });
    expect(rest).toMatchObject({ remaining: 0, pass: 2 });
    expect(dumpInMemoryStore(store)).not.toContain('plain-');
  });

  it('an interrupted run never says nothing is left: remaining is null until a pass has read the whole store', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    let app = await open(store, clock, { codec: k1 });
    for (let i = 0; i < 5; i++) await app.client.start(EncSleep, { secret: `stop-${i}` }, { id: `stop-${i}` });
    app = await reopen(app, store, clock, { codec: [new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' }), k1] });
    const stop = new AbortController();
    const stopped = await app.client.reencrypt({ batchSize: 2, signal: stop.signal, onProgress: () => stop.abort() });
    expect(stopped).toMatchObject({ phase: 'instances', rewritten: 2, read: { instances: 2 } });
    // Three instances are still under k1: whoever reads only `remaining` must not drop k1.
    expect(stopped.remaining).toBeNull();
    // Resumed, and stopped again after its first batch (the rest of the instances): still not whole.
    const stop2 = new AbortController();
    const resumed = await app.client.reencrypt({
      batchSize: 50,
      resumeFrom: stopped.cursor,
      signal: stop2.signal,
      onProgress: () => stop2.abort(),
    });
    expect(resumed).toMatchObject({ pass: 1, rewritten: 3 });
    expect(resumed.remaining).toBeNull();
    // Resumed and held to one pass, it reads only from the cursor on: not the whole store either.
    expect(await app.client.reencrypt({ resumeFrom: resumed.cursor, maxPasses: 1 })).toMatchObject({
      phase: 'done',
      remaining: null,
    });
    expect(await app.client.reencrypt({ resumeFrom: resumed.cursor })).toMatchObject({ remaining: 0 });
    expect(dumpInMemoryStore(store)).not.toContain('$wfc1:k1:');
  });

  it('refuses a store whose listSchedules() ignores "after", instead of paging through the same schedules for ever', async () => {
    const store = new InMemoryWorkflowStore();
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
    const k1 = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k1' });
    let app = await open(store, clock, { codec: k1 });
    for (const id of ['s-1', 's-2', 's-3']) {
      await app.storage.schedules.saveSchedule({
        id,
        workflow: 'enc.sleep',
        declared: false,
        spec: { every: '1h' },
        input: { secret: id },
        paused: false,
        wakeAt: null,
        state: {},
        expectRevision: null,
        releaseLease: false,
        now: clock.now(),
      });
    }
    const listSchedules = store.listSchedules.bind(store);
    store.listSchedules = ({ after: _ignored, ...query }) => listSchedules(query);
    app = await reopen(app, store, clock, { codec: [new AesGcmPayloadCodec({ key: randomBytes(32), id: 'k2' }), k1] });
    await expect(app.client.reencrypt({ batchSize: 2 })).rejects.toThrow(
      /listSchedules\(\) ignored the query's "after": asked for the schedules after "s-2", it returned that schedule again/,
    );
  });
});
