// A cancel or terminate that lands after the claim and before the execution's first step (while the
// claim's answer is on its way, or while a rerun reads its journal): the execution must not run a
// step after the request returned. Run on every store: the in-memory one, PostgreSQL and MariaDB.
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { Workflow, type WorkflowContext, type WorkflowStore } from '../../src/index.js';
import { scenarioApps, type ScenarioApp } from './scenario-apps.js';

/** What each instance did, by id. */
const done = new Map<string, string[]>();
const did = (id: string, what: string): void => void done.set(id, [...(done.get(id) ?? []), what]);

/** Reserves (undone by a cancel's compensation), pauses, then charges: the charge is the side effect a cancel must prevent. */
@Workflow('cancel-at-start.order')
class Order {
  async run(ctx: WorkflowContext) {
    await ctx.step('reserve', () => did(ctx.id, 'reserve'), { compensate: () => did(ctx.id, 'undo reserve') });
    await ctx.sleep('pause', '1m');
    await ctx.step('charge', () => did(ctx.id, 'charge'));
    return 'charged';
  }
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A store call held for the test: `reached` once the worker is in it, and it goes on at `release()`. */
interface Hold {
  reached: Promise<void>;
  release(): void;
}

/**
 * Holds the worker's read of `id`'s journal: `before` it reaches the store (so it reads what the
 * test committed meanwhile), or `after` the store answered (so its answer predates it).
 */
function holdJournalRead(
  store: WorkflowStore,
  id: string,
  when: 'before' | 'after',
  restores: Array<() => void>,
): Hold {
  const reached = deferred();
  const released = deferred();
  const original = store.get;
  store.get = async function (this: WorkflowStore, target, options) {
    if (target !== id || !options?.journal) return original.call(this, target, options);
    store.get = original;
    reached.resolve();
    if (when === 'before') await released.promise;
    const details = await original.call(this, target, options);
    if (when === 'after') await released.promise;
    return details;
  };
  restores.push(() => (store.get = original));
  return { reached: reached.promise, release: released.resolve };
}

/** Holds the answer of the claim that takes `id` (committed already) until `release()`. */
function holdClaim(store: WorkflowStore, id: string, restores: Array<() => void>): Hold {
  const reached = deferred();
  const released = deferred();
  const original = store.claim;
  store.claim = async function (this: WorkflowStore, request) {
    const claim = await original.call(this, request);
    if (!claim.instances.some((instance) => instance.id === id)) return claim;
    store.claim = original;
    reached.resolve();
    await released.promise;
    return claim;
  };
  restores.push(() => (store.claim = original));
  return { reached: reached.promise, release: released.resolve };
}

/**
 * Registers the scenario's tests; `storeOf()` is the store of the test (a fresh one, or a schema the
 * tests share: every test uses ids of its own).
 */
export function cancelAtStartTests(storeOf: () => WorkflowStore): void {
  const { app, restores } = scenarioApps(storeOf, [Order]);

  /** An instance that reserved and sleeps, due again: its next execution reads its journal. */
  async function dueAgain(a: ScenarioApp) {
    const { id } = await a.client.start(Order, null, { id: `order-${randomUUID()}` });
    await a.worker.drain();
    expect(done.get(id)).toEqual(['reserve']);
    a.clock.advance('1m');
    return id;
  }

  for (const request of ['cancel', 'terminate'] as const) {
    const ended =
      request === 'cancel'
        ? { error: 'WorkflowCancelledError', did: ['reserve', 'undo reserve'] }
        : { error: 'WorkflowTerminatedError', did: ['reserve'] };
    const expectEnded = async (a: ScenarioApp, id: string, did: string[] | undefined) => {
      const status = await a.client.getStatus(id);
      expect({
        status: status.status,
        error: status.error?.name,
        message: status.error?.message,
        did: done.get(id),
      }).toEqual({
        status: 'cancelled',
        error: ended.error,
        message: 'stop',
        did,
      });
    };

    const whens = {
      before: 'before a rerun reads its journal',
      after: "while a rerun's journal read is out (answered before it landed)",
    } as const;
    for (const [when, during] of Object.entries(whens) as Array<[keyof typeof whens, string]>) {
      it(`a ${request} accepted in this process ${during}: no step runs after it returned`, async () => {
        const a = await app();
        const id = await dueAgain(a);
        const read = holdJournalRead(storeOf(), id, when, restores);
        const drained = a.worker.drain();
        await read.reached;
        await a.client[request](id, 'stop');
        read.release();
        await drained;
        await expectEnded(a, id, ended.did);
      });
    }

    it(`a ${request} another process committed before a rerun reads its journal: the read's flags stop it, no step runs`, async () => {
      const a = await app();
      const id = await dueAgain(a);
      const read = holdJournalRead(storeOf(), id, 'before', restores);
      const drained = a.worker.drain();
      await read.reached;
      // Another process's client: the store's own request, which nothing in this process hears of.
      expect(
        await storeOf().requestCancel(id, { reason: 'stop', now: a.clock.now(), terminate: request === 'terminate' }),
      ).toBe(true);
      read.release();
      await drained;
      await expectEnded(a, id, ended.did);
    });

    it(`a ${request} accepted in this process after the claim committed, before its answer came back: the first step does not run`, async () => {
      const a = await app();
      const id = `order-${randomUUID()}`;
      await a.client.start(Order, null, { id });
      const claim = holdClaim(storeOf(), id, restores);
      const drained = a.worker.drain();
      await claim.reached;
      await a.client[request](id, 'stop');
      claim.release();
      await drained;
      await expectEnded(a, id, undefined);
    });
  }
}
