// A store's notification that names a cancel or terminate (`listen()`'s `'cancel'`, as PostgreSQL
// sends it) stops an execution of that instance running in this process within a renewal, not at
// its next heartbeat (an hour here), whichever process stored the request: here the store's own
// requestCancel(), which nothing in this process hears of but the notification. A notice of some
// request the store cannot name (MySQL's counter) makes a claim still out read the flags at its
// start, and wakes no one. A store that names nothing (the in-memory one) leaves it to the heartbeat.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  InMemoryWorkflowStore,
  Workflow,
  type WorkflowContext,
  type WorkflowListenOptions,
  type WorkflowStore,
  type WorkflowWakeUpKind,
} from '../../src/index.js';
import { systemClock } from '../../src/time/workflow-clock.js';
import { createEngineApp } from './support/engine-app.js';

/** What each instance did, by id; the step each one holds, ended by its signal. */
const did = new Map<string, string[]>();
const record = (id: string, what: string) => void did.set(id, [...(did.get(id) ?? []), what]);
const holding = new Map<string, () => void>();

@Workflow('cancel-notice.hold')
class HoldThenCharge {
  async run(ctx: WorkflowContext) {
    await ctx.step(
      'hold',
      ({ signal }) =>
        new Promise<string>((resolve) => {
          record(ctx.id, 'hold');
          holding.get(ctx.id)?.();
          signal.addEventListener('abort', () => resolve('stopped'), { once: true });
        }),
      { compensate: () => record(ctx.id, 'undo hold') },
    );
    await ctx.step('charge', () => record(ctx.id, 'charge'));
    return 'charged';
  }
}

/** The in-memory store with a `listen()` the test drives, as another process's notifications would. */
class NotifyingStore extends InMemoryWorkflowStore {
  listener: ((id?: string, kind?: WorkflowWakeUpKind) => void) | null = null;
  renewals = 0;

  async listen(
    listener: (id?: string, kind?: WorkflowWakeUpKind) => void,
    _options?: WorkflowListenOptions,
  ): Promise<() => Promise<void>> {
    this.listener = listener;
    return async () => void (this.listener = null);
  }

  override renew(...args: Parameters<InMemoryWorkflowStore['renew']>): ReturnType<InMemoryWorkflowStore['renew']> {
    this.renewals++;
    return super.renew(...args);
  }

  /** A cancel or terminate stored "in another process": the store's own request, then its notification. */
  async requestFromElsewhere(
    id: string,
    terminate: boolean,
    notice: 'named' | 'unnamed' | 'plain' = 'named',
  ): Promise<void> {
    expect(await this.requestCancel(id, { reason: 'stop', now: Date.now(), terminate })).toBe(true);
    if (notice === 'named') this.listener!(id, 'cancel');
    // As MySQL's counter tells it: some request was stored, which one it does not say.
    else if (notice === 'unnamed') this.listener!(undefined, 'cancel');
    else this.listener!();
  }
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('a cancel or terminate named by the store', () => {
  const closes: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closes.splice(0)) await close();
  });

  async function app(store: WorkflowStore, pollInterval = '20ms') {
    const started = await createEngineApp({
      workflows: [HoldThenCharge],
      store,
      clock: systemClock,
      worker: { pollInterval, leaseDuration: '2h', heartbeatInterval: '1h', shutdownTimeout: '100ms' },
    });
    closes.push(() => started.close());
    return started.client;
  }

  /** Starts an instance the way another process would (created due, claimed by this worker's poll); resolves once its step holds. */
  async function running(store: NotifyingStore, id: string): Promise<void> {
    const held = deferred();
    holding.set(id, held.resolve);
    await store.create({
      id,
      workflow: 'cancel-notice.hold',
      version: 1,
      input: null,
      deadline: null,
      now: Date.now(),
    });
    await held.promise;
  }

  for (const [request, ended] of [
    ['cancel', { error: 'WorkflowCancelledError', did: ['hold', 'undo hold'] }],
    ['terminate', { error: 'WorkflowTerminatedError', did: ['hold'] }],
  ] as const) {
    it(`stops the running execution of the instance a ${request} notice names, with one renewal`, async () => {
      const store = new NotifyingStore();
      const client = await app(store);
      const id = `running-${request}`;
      await running(store, id);
      const renewals = store.renewals;
      await store.requestFromElsewhere(id, request === 'terminate');
      await vi.waitFor(async () => expect((await client.getStatus(id)).status).toBe('cancelled'), {
        timeout: 2_000,
        interval: 10,
      });
      expect((await client.getStatus(id)).error?.name).toBe(ended.error);
      expect(did.get(id)).toEqual(ended.did);
      expect(store.renewals - renewals).toBe(1);
    });

    for (const notice of ['named', 'unnamed'] as const) {
      it(`reads the flags at the start of a claim whose answer came after the ${notice} ${request} notice`, async () => {
        const store = new NotifyingStore();
        const id = `claim-out-${request}`;
        const answered = deferred();
        const released = deferred();
        const claim = store.claim.bind(store);
        store.claim = async (request) => {
          const claimed = await claim(request);
          if (!claimed.instances.some((instance) => instance.id === id)) return claimed;
          store.claim = claim;
          answered.resolve();
          await released.promise;
          return claimed;
        };
        const client = await app(store);
        await store.create({
          id,
          workflow: 'cancel-notice.hold',
          version: 1,
          input: null,
          deadline: null,
          now: Date.now(),
        });
        await answered.promise;
        // Committed after the claim read the flags, heard before its answer reached the worker.
        await store.requestFromElsewhere(id, request === 'terminate', notice);
        released.resolve();
        await vi.waitFor(async () => expect((await client.getStatus(id)).status).toBe('cancelled'), {
          timeout: 2_000,
          interval: 10,
        });
        expect((await client.getStatus(id)).error?.name).toBe(ended.error);
        expect(did.get(id)).toBeUndefined();
      });
    }
  }

  it('claims nothing for a notice of some request it cannot name (no wake-up, unlike a plain one)', async () => {
    const store = new NotifyingStore();
    let claims = 0;
    const claim = store.claim.bind(store);
    store.claim = (request) => (claims++, claim(request));
    await app(store, '1h');
    await vi.waitFor(() => expect(claims).toBeGreaterThan(0));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = claims;
    for (let i = 0; i < 5; i++) store.listener!(undefined, 'cancel');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(claims).toBe(before);
    store.listener!();
    await vi.waitFor(() => expect(claims).toBe(before + 1));
  });

  it('leaves an execution to its heartbeat when the store names no cancel (a plain wake-up, as before)', async () => {
    const store = new NotifyingStore();
    const client = await app(store);
    const id = 'plain-wake-up';
    await running(store, id);
    const renewals = store.renewals;
    await store.requestFromElsewhere(id, false, 'plain');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await client.getStatus(id)).status).toBe('running');
    expect(did.get(id)).toEqual(['hold']);
    expect(store.renewals).toBe(renewals);
  });
});
