import { Workflow } from '../../decorators/workflow.decorator.js';
import type { WorkflowContext } from '../../engine/workflow-context.js';
import { WorkflowSignal } from '../../signals/workflow-signal.js';
import type {
  WorkflowBulkChange,
  WorkflowCancelRequest,
  WorkflowListQuery,
  WorkflowStore,
} from '../../storage/workflow-store.js';
import { claimRequest, journalEntry, newInstance, newSignal, runWorkflowName, testScope } from '../store-fixtures.js';
import { contractEngines } from './contract-engine.js';
import type { ContractSuite } from './contract-suite.js';

/** Opened by a test: the step `held` waits on it. */
let gate: { open: () => void; opened: Promise<void> } | null = null;
/** The steps the racing workflow ran, by instance. */
const ran: string[] = [];

@Workflow(runWorkflowName('fork.race'), { retry: false })
export class ForkRace {
  async run(ctx: WorkflowContext, n: number) {
    const a = await ctx.step('a', () => (ran.push(`${ctx.id} a`), n));
    const b = await ctx.step('b', () => (ran.push(`${ctx.id} b`), a + 1));
    const held = await ctx.step('held', async () => {
      ran.push(`${ctx.id} held`);
      await gate?.opened;
      return b + 1;
    });
    return ctx.step('c', () => (ran.push(`${ctx.id} c`), held + 1));
  }
}

const go = new WorkflowSignal<null>(runWorkflowName('bulk.go'));

@Workflow(runWorkflowName('bulk.race'))
export class BulkRace {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go', go, { key: ctx.id });
    return 'done';
  }
}

function newGate(): NonNullable<typeof gate> {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/**
 * `fork()` (optional for a store of your own; every store shipped has it): the fork is created with
 * its origin and journal in one transaction, and `client.fork()` copies a running source's journal
 * as it stands. Bulk actions (`cancelMany()`...) act on each matching instance once while others
 * change status under them.
 */
export function forkContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('fork', () => {
    const engines = contractEngines(suite);

    it('fork: creates the instance with its origin and its journal in order, due now, its cursor the last signal id', async () => {
      const s = testScope();
      const store = suite.store as Required<Pick<WorkflowStore, 'fork'>> & WorkflowStore;
      expect(typeof store.fork).toBe('function');
      const sent = await store.signal(newSignal(s.signal('before')));
      const entries = [
        journalEntry('z-first'),
        journalEntry('a-second', { kind: 'signal', value: 'taken', signalId: sent.id }),
        journalEntry('m-third', { kind: 'sleep', state: 'waiting', wakeAt: 5 }),
      ];
      const init = newInstance(s.id('fork'), s.workflow);
      const { instance, created } = await store.fork({ instance: init, from: { id: s.id('src'), step: 'x' }, entries });
      expect(created).toBe(true);
      expect(instance).toMatchObject({
        id: s.id('fork'),
        status: 'pending',
        runs: 0,
        signalCursor: sent.id,
        forkedFrom: { id: s.id('src'), step: 'x' },
      });
      const read = await store.get(s.id('fork'), { journal: true });
      expect(read?.forkedFrom).toEqual({ id: s.id('src'), step: 'x' });
      expect(read?.journal).toEqual(entries);
      expect((await store.list({ idPrefix: s.id('fork'), limit: 10, offset: 0 }))[0]?.forkedFrom).toEqual({
        id: s.id('src'),
        step: 'x',
      });
      const claim = await store.claim(claimRequest(s.workflow));
      expect(claim.instances.map((i) => [i.id, i.forkedFrom])).toEqual([
        [s.id('fork'), { id: s.id('src'), step: 'x' }],
      ]);

      // An existing id is returned untouched: no journal added, no origin set.
      await store.create(newInstance(s.id('plain'), s.workflow));
      const again = await store.fork({
        instance: newInstance(s.id('plain'), s.workflow),
        from: { id: s.id('src'), step: null },
        entries: [journalEntry('never')],
      });
      expect(again.created).toBe(false);
      const plain = await store.get(s.id('plain'), { journal: true });
      expect(plain?.journal).toEqual([]);
      expect(plain?.forkedFrom ?? null).toBeNull();
    });

    it('fork: stores nothing when an entry cannot be stored', async () => {
      const s = testScope();
      const store = suite.store as Required<Pick<WorkflowStore, 'fork'>> & WorkflowStore;
      await expect(
        store.fork({
          instance: newInstance(s.id('bad'), s.workflow),
          from: { id: s.id('src'), step: null },
          entries: [journalEntry('fine'), journalEntry('bad', { value: 'lone \ud800 surrogate' })],
        }),
      ).rejects.toThrow();
      expect(await store.get(s.id('bad'))).toBeNull();
    });

    it('client.fork() of a running source copies its journal as it stands, and refuses a step it has not reached', async () => {
      const s = testScope();
      ran.length = 0;
      gate = newGate();
      const engine = engines.open({ workflows: [ForkRace] });
      const source = s.id('src');
      await engine.client.start(ForkRace, 1, { id: source });
      const draining = engine.drain();
      try {
        // The source is inside "held": "a" and "b" are journaled, "held" and "c" are not yet.
        while (!ran.includes(`${source} held`)) await new Promise((resolve) => setTimeout(resolve, 5));
        for (const step of ['held', 'c']) {
          await expect(engine.client.fork(source, { fromStep: step, id: s.id('too-far') })).rejects.toThrow(
            new RegExp(`no step "${step}"`),
          );
        }
        expect(await suite.store.get(s.id('too-far'))).toBeNull();
        const fork = await engine.client.fork(source, { fromStep: 'b', id: s.id('fork'), input: 10 });
        expect((await engine.client.getStatus(fork.id, { journal: true })).journal!.map((e) => e.name)).toEqual(['a']);
      } finally {
        gate.open();
      }
      await draining;
      await engine.drain();
      expect(await engine.client.getStatus(source)).toMatchObject({ status: 'completed', output: 4 });
      // The fork kept "a" (1, the source's, not its own input's), ran "b", "held" and "c" itself.
      const fork = s.id('fork');
      expect(await engine.client.getStatus(fork)).toMatchObject({
        status: 'completed',
        output: 4,
        input: 10,
        forkedFrom: { id: source, step: 'b' },
      });
      expect(ran.filter((r) => r.startsWith(fork))).toEqual([`${fork} b`, `${fork} held`, `${fork} c`]);
      expect(ran.filter((r) => r.startsWith(source))).toEqual([
        `${source} a`,
        `${source} b`,
        `${source} held`,
        `${source} c`,
      ]);
      gate = null;
    });

    it('cancelMany() acts on each matching instance once while instances end under it', async () => {
      const s = testScope();
      const calls = new Map<string, number>();
      let lists = 0;
      let underIt: (() => Promise<void>) | null = null;
      const store = new Proxy(suite.store, {
        get(target, prop) {
          // Each id the action hands the store, page by page (or one by one, on a store without pages).
          if (prop === 'requestCancel') {
            return (id: string, request: WorkflowCancelRequest) => {
              calls.set(id, (calls.get(id) ?? 0) + 1);
              return target.requestCancel(id, request);
            };
          }
          if (prop === 'changeMany' && target.changeMany) {
            return (ids: readonly string[], change: WorkflowBulkChange) => {
              for (const id of ids) calls.set(id, (calls.get(id) ?? 0) + 1);
              return target.changeMany!(ids, change);
            };
          }
          if (prop === 'list') {
            return async (query: WorkflowListQuery) => {
              const page = await target.list(query);
              lists++;
              const race = underIt;
              underIt = null;
              await race?.();
              return page;
            };
          }
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
      const engine = engines.open({ workflows: [BulkRace] }, store);
      const ids = Array.from({ length: 1050 }, (_, n) => s.id(`i${String(n).padStart(4, '0')}`));
      for (let n = 0; n < ids.length; n += 100)
        await Promise.all(ids.slice(n, n + 100).map((id) => engine.client.start(BulkRace, null, { id })));
      await engine.drain();
      // Between the read of the first page and the action on it, every tenth instance completes.
      const ending = ids.filter((_, n) => n % 10 === 0);
      underIt = async () => {
        for (const id of ending) await engine.client.signal(go, null, { key: id });
        await engine.drain();
      };
      const result = await engine.client.cancelMany({ idPrefix: s.prefix, workflow: BULK_NAME }, { reason: 'race' });
      expect(lists).toBe(2);
      expect(result).toEqual({ matched: 1050, changed: 1050 - ending.length });
      // Each asked once: those that ended under the first page too (listed unfinished, the store
      // refuses them); those of the second page were listed finished and are passed over.
      expect(calls.size).toBe(1050 - ending.filter((id) => ids.indexOf(id) >= 1000).length);
      expect([...calls.values()].every((count) => count === 1)).toBe(true);
      await engine.drain();
      const statuses = await Promise.all(ids.map(async (id) => (await suite.store.get(id))!.status));
      expect(statuses.filter((status) => status === 'completed').length).toBe(ending.length);
      expect(statuses.filter((status) => status === 'cancelled').length).toBe(1050 - ending.length);
      expect(await engine.client.cancelMany({ idPrefix: s.prefix }, { reason: 'again' })).toEqual({
        matched: 1050,
        changed: 0,
      });
    }, 120_000);
  });
}

const BULK_NAME = runWorkflowName('bulk.race');
