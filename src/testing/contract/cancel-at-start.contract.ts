import { randomUUID } from 'node:crypto';
import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { runWorkflowName } from '../store-fixtures.js';
import { contractEngines, type ContractEngine } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

/** What each instance did, by id. */
const done = new Map<string, string[]>();
const did = (id: string, what: string): void => void done.set(id, [...(done.get(id) ?? []), what]);

/** Reserves (undone by a cancel's compensation), pauses, then charges: the charge is the side effect a cancel must prevent. */
@Workflow(runWorkflowName('cancel-at-start.order'))
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
  onEnd: (undo: () => void) => void,
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
  onEnd(() => (store.get = original));
  return { reached: reached.promise, release: released.resolve };
}

/** Holds the answer of the claim that takes `id` (committed already) until `release()`. */
function holdClaim(store: WorkflowStore, id: string, onEnd: (undo: () => void) => void): Hold {
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
  onEnd(() => (store.claim = original));
  return { reached: reached.promise, release: released.resolve };
}

/**
 * A cancel or terminate that lands after the claim and before the execution's first step (while the
 * claim's answer is on its way, or while a rerun reads its journal): the execution must not run a
 * step after the request returned. The store's part: a claim, and a journal read, answer with the
 * cancel flags stored before them.
 */
export function cancelAtStartContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('a cancel or terminate between the claim and the first step', () => {
    const engines = contractEngines(suite);

    /** An instance that reserved and sleeps, due again: its next execution reads its journal. */
    async function dueAgain(engine: ContractEngine) {
      const { id } = await engine.client.start(Order, null, { id: `order-${randomUUID()}` });
      await engine.drain();
      expect(done.get(id)).toEqual(['reserve']);
      engine.clock.advance('1m');
      return id;
    }

    for (const request of ['cancel', 'terminate'] as const) {
      const ended =
        request === 'cancel'
          ? { error: 'WorkflowCancelledError', did: ['reserve', 'undo reserve'] }
          : { error: 'WorkflowTerminatedError', did: ['reserve'] };
      const expectEnded = async (engine: ContractEngine, id: string, did: string[] | undefined) => {
        const status = await engine.client.getStatus(id);
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
          const engine = engines.open({ workflows: [Order] });
          const id = await dueAgain(engine);
          const read = holdJournalRead(suite.store, id, when, engines.onEnd);
          const drained = engine.drain();
          await read.reached;
          await engine.client[request](id, 'stop');
          read.release();
          await drained;
          await expectEnded(engine, id, ended.did);
        });
      }

      it(`a ${request} another process committed before a rerun reads its journal: the read's flags stop it, no step runs`, async () => {
        const engine = engines.open({ workflows: [Order] });
        const id = await dueAgain(engine);
        const read = holdJournalRead(suite.store, id, 'before', engines.onEnd);
        const drained = engine.drain();
        await read.reached;
        // Another process's client: the store's own request, which nothing in this process hears of.
        expect(
          await suite.store.requestCancel(id, {
            reason: 'stop',
            now: engine.clock.now(),
            terminate: request === 'terminate',
          }),
        ).toBe(true);
        read.release();
        await drained;
        await expectEnded(engine, id, ended.did);
      });

      it(`a ${request} accepted in this process after the claim committed, before its answer came back: the first step does not run`, async () => {
        const engine = engines.open({ workflows: [Order] });
        const id = `order-${randomUUID()}`;
        await engine.client.start(Order, null, { id });
        const claim = holdClaim(suite.store, id, engines.onEnd);
        const drained = engine.drain();
        await claim.reached;
        await engine.client[request](id, 'stop');
        claim.release();
        await drained;
        await expectEnded(engine, id, undefined);
      });
    }
  });
}
