import { randomUUID } from 'node:crypto';
import { FINISHED_STATUSES, UNFINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowInstanceDetails, WorkflowScheduleSave, WorkflowStore } from '../storage/workflow-store.js';
import {
  BASE_TIME as T,
  claimRequest,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  purgeSpan,
  scheduleSave,
  settle,
  snapshot,
  testScope,
} from './store-fixtures.js';

/** A store under test, and how to release what it holds once a test ends. */
export interface WorkflowStoreHarness {
  store: WorkflowStore;
  /** Called after every test (close a pool, drop a schema...). */
  close?: () => Promise<void>;
}

export interface WorkflowStoreContractOptions {
  /** A reason to register the suite as skipped (a database that isn't reachable); `false` runs it. */
  skip?: string | false;
  /**
   * The test runner's functions: `await import('vitest')` in a vitest spec. Default: the runner's
   * globals (Jest, or vitest with `globals: true`).
   */
  test?: WorkflowContractTestApi;
}

/** What the suite needs of a test runner: vitest's and Jest's functions both fit. */
export interface WorkflowContractTestApi {
  describe: ((name: string, fn: () => void) => void) & { skip: (name: string, fn: () => void) => void };
  it: (name: string, fn: () => Promise<void> | void, timeout?: number) => void;
  expect: (actual: unknown, message?: string) => any; // eslint-disable-line @typescript-eslint/no-explicit-any -- each runner types its own matchers
  beforeEach: (fn: () => Promise<void> | void) => void;
  afterEach: (fn: () => Promise<void> | void) => void;
}

// Bound when `workflowStoreContract()` registers its suites: the module imports no test runner, so
// it loads in CommonJS too (vitest can't be required) and works under Jest as under vitest.
let describe: WorkflowContractTestApi['describe'];
let it: WorkflowContractTestApi['it'];
let expect: WorkflowContractTestApi['expect'];
let beforeEach: WorkflowContractTestApi['beforeEach'];
let afterEach: WorkflowContractTestApi['afterEach'];

function bindTestApi(given: WorkflowContractTestApi | undefined): void {
  const globals = globalThis as unknown as Partial<WorkflowContractTestApi>;
  const api = given ?? (globals.describe && globals.it && globals.expect && globals.beforeEach && globals.afterEach ? (globals as WorkflowContractTestApi) : undefined);
  if (!api) {
    throw new TypeError(
      'workflowStoreContract() found no test runner: pass its functions, as in ' +
        "workflowStoreContract('my-store', makeStore, { test: await import('vitest') }), or run it under Jest or vitest with globals enabled.",
    );
  }
  ({ describe, it, expect, beforeEach, afterEach } = api);
}

/**
 * Registers test suites (vitest or Jest) that check a `WorkflowStore` against every rule of its interface:
 * results, ordering, filters and paging, what each call must leave unchanged, and the races, run
 * with real concurrency (calls started together, which a SQL store's pool spreads over several
 * connections). `makeStore` runs before every test; `close` after it. A store may be shared by
 * tests (and kept between runs): each test uses its own ids, workflow names and signal names, and
 * purge tests their own stretch of time below `BASE_TIME`.
 *
 * ```ts
 * workflowStoreContract('postgres', async () => {
 *   const pool = new Pool({ connectionString });
 *   return { store: new PostgresWorkflowStore({ executor: fromPg(pool) }), close: () => pool.end() };
 * }, { test: await import('vitest') });
 * ```
 */
export function workflowStoreContract(
  name: string,
  makeStore: () => Promise<WorkflowStoreHarness> | WorkflowStoreHarness,
  options: WorkflowStoreContractOptions = {},
): void {
  bindTestApi(options.test);
  if (typeof options.skip === 'string') {
    describe.skip(`${name} store contract (${options.skip})`, () => {
      it('is skipped', () => undefined);
    });
    return;
  }

  describe(`${name} store contract`, () => {
    let harness: WorkflowStoreHarness | undefined;
    let store: WorkflowStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
    });
    afterEach(async () => {
      await harness?.close?.();
      harness = undefined;
    });

    const details = async (id: string): Promise<WorkflowInstanceDetails> => {
      const found = await store.get(id, { journal: true });
      if (!found) throw new Error(`Expected instance ${id} to exist.`);
      return found;
    };
    const range = (n: number) => Array.from({ length: n }, (_, i) => i);
    const pad = (i: number) => String(i).padStart(3, '0');
    /** The ids a claim returned, sorted: which ones it took is the rule, not the order it returns them in. */
    const idsOf = (claim: { instances: Array<{ id: string }> }) => claim.instances.map((i) => i.id).sort();

    describe('create', () => {
      it('create: inserts a pending instance due at now, with every default', async () => {
        const s = testScope();
        const cursor = await lastSignalId(store);
        const { instance, created } = await store.create(newInstance(s.id('a'), s.workflow));
        expect(created).toBe(true);
        expect(instance).toEqual({
          id: s.id('a'),
          workflow: s.workflow,
          version: 1,
          status: 'pending',
          input: { order: s.id('a'), lines: [1, 2] },
          output: null,
          error: null,
          customStatus: null,
          parentId: null,
          parentClose: null,
          concurrencyKey: null,
          rateLimitKey: null,
          priority: 0,
          scheduleId: null,
          scheduledAt: null,
          deadline: null,
          wakeAt: T,
          runs: 0,
          signalCursor: cursor,
          leaseToken: null,
          leaseOwner: null,
          leaseUntil: null,
          cancelRequested: false,
          terminateRequested: false,
          cancelReason: null,
          createdAt: T,
          updatedAt: T,
        });
        expect(await store.get(s.id('a'))).toEqual({ ...instance, waits: [] });
      });

      it('create: stores every optional field as given, and is first due at the given wakeAt', async () => {
        const s = testScope();
        const init = newInstance(s.id('a'), s.workflow, {
          version: 3,
          input: 'plain string input',
          parentId: s.id('parent'),
          parentClose: 'terminate',
          concurrencyKey: 'customer-1',
          rateLimitKey: 'tenant-1',
          priority: 7,
          scheduleId: s.id('schedule'),
          scheduledAt: T - 60_000,
          deadline: T + 86_400_000,
          wakeAt: T + 5_000,
        });
        const { instance } = await store.create(init);
        expect(instance).toMatchObject({
          version: 3,
          input: 'plain string input',
          parentId: s.id('parent'),
          parentClose: 'terminate',
          concurrencyKey: 'customer-1',
          rateLimitKey: 'tenant-1',
          priority: 7,
          scheduleId: s.id('schedule'),
          scheduledAt: T - 60_000,
          deadline: T + 86_400_000,
          wakeAt: T + 5_000,
          createdAt: T,
        });
        const workflows = [{ name: s.workflow, version: 3 }];
        expect((await store.claim(claimRequest(s.workflow, { now: T + 4_999, workflows }))).instances).toEqual([]);
        const claimed = await store.claim(claimRequest(s.workflow, { now: T + 5_000, workflows }));
        expect(claimed.instances.map((i) => i.id)).toEqual([s.id('a')]);
      });

      it('create: an existing id returns the stored instance unchanged, with created false', async () => {
        const s = testScope();
        await lease(store, newInstance(s.id('a'), s.workflow));
        const before = await snapshot(store, s.id('a'));
        const again = await store.create(
          newInstance(s.id('a'), `${s.workflow}-other`, { input: { other: true }, priority: 9, now: T + 1_000 }),
        );
        expect(again.created).toBe(false);
        const { waits: _waits, journal: _journal, ...stored } = before!;
        expect(again.instance).toEqual(stored);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
      });

      it('create: signalCursor is the last signal id when the instance is created', async () => {
        const s = testScope();
        const { instance: early } = await store.create(newInstance(s.id('early'), s.workflow));
        const sent = await store.signal(newSignal(s.signal('n')));
        const { instance: late } = await store.create(newInstance(s.id('late'), s.workflow));
        expect(early.signalCursor).toBeLessThan(sent.id);
        expect(late.signalCursor).toBe(sent.id);
      });

      it('create: of concurrent creates of one id exactly one creates, and every call returns that instance', async () => {
        const s = testScope();
        const results = await Promise.all(
          range(10).map((i) => store.create(newInstance(s.id('a'), s.workflow, { input: { attempt: i } }))),
        );
        const winners = results.filter((r) => r.created);
        expect(winners).toHaveLength(1);
        for (const result of results) expect(result.instance).toEqual(winners[0]!.instance);
        expect((await details(s.id('a'))).input).toEqual(winners[0]!.instance.input);
      });

      it('create: with a lease, starts the instance claimed (running, runs 1, the lease) and no claim takes it while the lease holds', async () => {
        const s = testScope();
        const token = randomUUID();
        const { instance, created } = await store.create(
          newInstance(s.id('a'), s.workflow, { lease: { owner: 'starter', token, leaseUntil: T + 30_000 } }),
        );
        expect(created).toBe(true);
        expect(instance).toMatchObject({ status: 'running', runs: 1, leaseToken: token, leaseOwner: 'starter', leaseUntil: T + 30_000 });
        expect(idsOf(await store.claim(claimRequest(s.workflow, { now: T + 30_000 })))).toEqual([]);
        expect(await store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('step-1')] })).toBe(true);
        // Once the lease lapses, a claim takes it like any other (runs 2).
        const later = await store.claim(claimRequest(s.workflow, { now: T + 30_001 }));
        expect(later.instances.map((i) => [i.id, i.runs])).toEqual([[s.id('a'), 2]]);
      });

      it('create: with a lease, an existing id is returned unchanged and not leased', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow));
        const before = await snapshot(store, s.id('a'));
        const again = await store.create(
          newInstance(s.id('a'), s.workflow, { lease: { owner: 'starter', token: randomUUID(), leaseUntil: T + 30_000 } }),
        );
        expect(again.created).toBe(false);
        expect(again.instance).toMatchObject({ status: 'pending', runs: 0, leaseToken: null });
        expect(await snapshot(store, s.id('a'))).toEqual(before);
      });

      it('create: keeps its own copy: mutating the argument or a result changes nothing stored', async () => {
        const s = testScope();
        const init = newInstance(s.id('a'), s.workflow, { input: { nested: { n: 1 } } });
        const { instance } = await store.create(init);
        (init.input as { nested: { n: number } }).nested.n = 2;
        (instance.input as { nested: { n: number } }).nested.n = 3;
        instance.status = 'completed';
        const read = await details(s.id('a'));
        (read.input as { nested: { n: number } }).nested.n = 4;
        read.waits.push({ name: 'x', key: null });
        expect(await details(s.id('a'))).toMatchObject({ status: 'pending', input: { nested: { n: 1 } }, waits: [] });
      });
    });

    describe('get and list', () => {
      it('get: returns null for an unknown id', async () => {
        expect(await store.get(testScope().id('missing'))).toBeNull();
        expect(await store.get(testScope().id('missing'), { journal: true })).toBeNull();
      });

      it('get: returns waits [] and no journal unless asked; an empty journal when asked', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow));
        const plain = await store.get(s.id('a'));
        expect(plain!.waits).toEqual([]);
        expect(plain!.journal).toBeUndefined();
        expect((await store.get(s.id('a'), { journal: true }))!.journal).toEqual([]);
      });

      it('get: returns the journal in first-write order, keeping null and absent fields apart', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        const sleep = { name: 'nap', kind: 'sleep' as const, state: 'waiting' as const, wakeAt: null, createdAt: T, updatedAt: T };
        const nothing = journalEntry('returns-null', { value: null });
        const failed = {
          name: 'charge',
          kind: 'step' as const,
          state: 'failed' as const,
          error: { name: 'PaymentError', message: 'declined', code: 42 },
          attempts: 3,
          createdAt: T,
          updatedAt: T + 1,
        };
        expect(await store.write(s.id('a'), token, { now: T, entries: [sleep, nothing] })).toBe(true);
        expect(await store.write(s.id('a'), token, { now: T + 1, entries: [failed] })).toBe(true);
        const journal = (await details(s.id('a'))).journal!;
        expect(journal.map((e) => e.name)).toEqual(['nap', 'returns-null', 'charge']);
        expect(journal[0]).toEqual(sleep);
        expect(journal[0]!.wakeAt).toBeNull();
        expect('value' in journal[0]!).toBe(false);
        expect('error' in journal[0]!).toBe(false);
        expect(journal[1]!.value).toBeNull();
        expect('error' in journal[1]!).toBe(false);
        expect(journal[2]).toEqual(failed);
        expect('value' in journal[2]!).toBe(false);
      });

      it('list: filters by status (any of), workflow, version, parentId and scheduleId, all combined', async () => {
        const s = testScope();
        const [w, w2, parent, schedule] = [s.workflow, `${s.workflow}-2`, s.id('parent'), s.id('schedule')];
        await settle(store, newInstance(s.id('a'), w, { parentId: parent, now: T + 1 }), 'completed');
        await settle(store, newInstance(s.id('b'), w, { version: 2, parentId: parent, now: T + 2 }), 'failed');
        await store.create(newInstance(s.id('c'), w2, { parentId: parent, scheduleId: schedule, now: T + 3 }));
        await lease(store, newInstance(s.id('d'), w, { parentId: parent, now: T + 4 }));
        await store.create(newInstance(s.id('e'), w, { scheduleId: schedule, now: T + 5 }));
        const ids = async (query: Partial<Parameters<WorkflowStore['list']>[0]>) =>
          (await store.list({ limit: 100, offset: 0, ...query })).map((i) => i.id.slice(s.prefix.length + 1));

        expect(await ids({ parentId: parent })).toEqual(['a', 'b', 'c', 'd']);
        expect(await ids({ parentId: parent, status: ['completed', 'failed'] })).toEqual(['a', 'b']);
        expect(await ids({ parentId: parent, status: ['running'] })).toEqual(['d']);
        expect(await ids({ workflow: w })).toEqual(['a', 'b', 'd', 'e']);
        expect(await ids({ workflow: w, version: 2 })).toEqual(['b']);
        expect(await ids({ scheduleId: schedule })).toEqual(['c', 'e']);
        expect(await ids({ workflow: w, scheduleId: schedule, status: ['pending'] })).toEqual(['e']);
        expect(await ids({ parentId: parent, workflow: w2, status: ['pending'] })).toEqual(['c']);
        expect(await ids({ workflow: w, status: ['cancelled'] })).toEqual([]);
        const [listed] = await store.list({ workflow: w, version: 2, limit: 1, offset: 0 });
        const { waits: _waits, journal: _journal, ...stored } = await details(s.id('b'));
        expect(listed).toEqual(stored);
      });

      it('list: orders by createdAt, then id, and pages with limit and offset', async () => {
        const s = testScope();
        for (const [name, at] of [['x0', 3], ['x2', 2], ['x3', 1], ['x1', 2]] as const) {
          await store.create(newInstance(s.id(name), s.workflow, { now: T + at }));
        }
        const page = async (limit: number, offset: number) =>
          (await store.list({ workflow: s.workflow, limit, offset })).map((i) => i.id.slice(s.prefix.length + 1));
        expect(await page(100, 0)).toEqual(['x3', 'x1', 'x2', 'x0']);
        expect(await page(2, 0)).toEqual(['x3', 'x1']);
        expect(await page(2, 1)).toEqual(['x1', 'x2']);
        expect(await page(2, 3)).toEqual(['x0']);
        expect(await page(2, 4)).toEqual([]);
      });
    });

    describe('requestCancel', () => {
      it('requestCancel: a cancel sets cancelRequested and cancelReason, makes the instance due now and sets updatedAt', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow, { wakeAt: T + 10_000 }));
        const before = await details(s.id('a'));
        expect(await store.requestCancel(s.id('a'), { reason: 'changed mind', now: T + 100, terminate: false })).toBe(true);
        expect(await details(s.id('a'))).toEqual({
          ...before,
          cancelRequested: true,
          terminateRequested: false,
          cancelReason: 'changed mind',
          wakeAt: T + 100,
          updatedAt: T + 100,
        });
      });

      it('requestCancel: keeps an earlier wakeAt when the instance is already due', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow, { wakeAt: T + 50 }));
        expect(await store.requestCancel(s.id('a'), { reason: null, now: T + 500, terminate: false })).toBe(true);
        expect(await details(s.id('a'))).toMatchObject({ wakeAt: T + 50, cancelReason: null, updatedAt: T + 500 });
      });

      it('requestCancel: a cancel applies to pending, running and suspended instances', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('pending'), `${s.workflow}-p`));
        await lease(store, newInstance(s.id('running'), `${s.workflow}-r`));
        await settle(store, newInstance(s.id('suspended'), `${s.workflow}-s`), 'suspended', { wakeAt: null });
        for (const name of ['pending', 'running', 'suspended']) {
          expect(await store.requestCancel(s.id(name), { reason: name, now: T + 10, terminate: false })).toBe(true);
          expect(await details(s.id(name))).toMatchObject({ status: name, cancelRequested: true, cancelReason: name });
        }
        expect((await details(s.id('suspended'))).wakeAt).toBe(T + 10);
        expect((await details(s.id('running'))).leaseToken).not.toBeNull();
      });

      it('requestCancel: a cancel is refused, changing nothing, for compensating and finished instances', async () => {
        const s = testScope();
        const statuses: WorkflowStatus[] = ['compensating', ...FINISHED_STATUSES];
        for (const status of statuses) await settle(store, newInstance(s.id(status), `${s.workflow}-${status}`), status);
        for (const status of statuses) {
          const before = await snapshot(store, s.id(status));
          expect(await store.requestCancel(s.id(status), { reason: 'no', now: T + 10, terminate: false })).toBe(false);
          expect(await snapshot(store, s.id(status))).toEqual(before);
        }
      });

      it('requestCancel: a repeated cancel, or one of an unknown id, is refused and changes nothing', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow));
        expect(await store.requestCancel(s.id('a'), { reason: 'first', now: T + 10, terminate: false })).toBe(true);
        const before = await snapshot(store, s.id('a'));
        expect(await store.requestCancel(s.id('a'), { reason: 'second', now: T + 20, terminate: false })).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.requestCancel(s.id('missing'), { reason: null, now: T, terminate: false })).toBe(false);
        expect(await store.requestCancel(s.id('missing'), { reason: null, now: T, terminate: true })).toBe(false);
        expect(await store.get(s.id('missing'))).toBeNull();
      });

      it('requestCancel: a terminate sets both flags and the reason on pending, running, suspended and compensating instances', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('pending'), `${s.workflow}-p`));
        await lease(store, newInstance(s.id('running'), `${s.workflow}-r`));
        await settle(store, newInstance(s.id('suspended'), `${s.workflow}-s`), 'suspended');
        await settle(store, newInstance(s.id('compensating'), `${s.workflow}-c`), 'compensating');
        for (const status of UNFINISHED_STATUSES) {
          const before = await details(s.id(status));
          expect(await store.requestCancel(s.id(status), { reason: 'stop', now: T + 10, terminate: true })).toBe(true);
          expect(await details(s.id(status))).toEqual({
            ...before,
            cancelRequested: true,
            terminateRequested: true,
            cancelReason: 'stop',
            wakeAt: before.wakeAt !== null && before.wakeAt <= T + 10 ? before.wakeAt : T + 10,
            updatedAt: T + 10,
          });
        }
      });

      it('requestCancel: a terminate is refused, changing nothing, for finished instances and when repeated', async () => {
        const s = testScope();
        for (const status of FINISHED_STATUSES) await settle(store, newInstance(s.id(status), `${s.workflow}-${status}`), status);
        await store.create(newInstance(s.id('twice'), s.workflow));
        expect(await store.requestCancel(s.id('twice'), { reason: 'first', now: T + 5, terminate: true })).toBe(true);
        for (const id of [...FINISHED_STATUSES, 'twice'].map(s.id)) {
          const before = await snapshot(store, id);
          expect(await store.requestCancel(id, { reason: 'again', now: T + 10, terminate: true })).toBe(false);
          expect(await snapshot(store, id)).toEqual(before);
        }
      });

      it('requestCancel: a terminate is accepted after a cancel, and a cancel is refused after a terminate', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow));
        await store.create(newInstance(s.id('b'), s.workflow));
        expect(await store.requestCancel(s.id('a'), { reason: 'cancel', now: T + 1, terminate: false })).toBe(true);
        expect(await store.requestCancel(s.id('a'), { reason: 'terminate', now: T + 2, terminate: true })).toBe(true);
        expect(await details(s.id('a'))).toMatchObject({ cancelRequested: true, terminateRequested: true, cancelReason: 'terminate' });
        expect(await store.requestCancel(s.id('b'), { reason: 'terminate', now: T + 1, terminate: true })).toBe(true);
        const before = await snapshot(store, s.id('b'));
        expect(await store.requestCancel(s.id('b'), { reason: 'cancel', now: T + 2, terminate: false })).toBe(false);
        expect(await snapshot(store, s.id('b'))).toEqual(before);
      });

      it('requestCancel: of concurrent cancels of one instance exactly one is accepted', async () => {
        const s = testScope();
        await lease(store, newInstance(s.id('a'), s.workflow));
        const accepted = await Promise.all(
          range(10).map((i) => store.requestCancel(s.id('a'), { reason: `r${i}`, now: T + i, terminate: false })),
        );
        expect(accepted.filter(Boolean)).toHaveLength(1);
        const winner = accepted.indexOf(true);
        expect(await details(s.id('a'))).toMatchObject({ cancelRequested: true, cancelReason: `r${winner}`, updatedAt: T + winner });
      });

      it('requestCancel: of concurrent terminates of one instance exactly one is accepted', async () => {
        const s = testScope();
        await settle(store, newInstance(s.id('a'), s.workflow), 'compensating');
        const accepted = await Promise.all(
          range(10).map((i) => store.requestCancel(s.id('a'), { reason: `r${i}`, now: T + i, terminate: true })),
        );
        expect(accepted.filter(Boolean)).toHaveLength(1);
        expect((await details(s.id('a'))).cancelReason).toBe(`r${accepted.indexOf(true)}`);
      });
    });

    describe('claim', () => {
      it('claim: leases due instances: token, owner, leaseUntil, runs + 1, updatedAt = now, status running', async () => {
        const s = testScope();
        const { instance } = await store.create(newInstance(s.id('a'), s.workflow));
        const request = claimRequest(s.workflow, { owner: 'worker-9', now: T + 100, leaseUntil: T + 30_100 });
        const claim = await store.claim(request);
        const expected = {
          ...instance,
          status: 'running',
          runs: 1,
          leaseToken: request.token,
          leaseOwner: 'worker-9',
          leaseUntil: T + 30_100,
          updatedAt: T + 100,
        };
        expect(claim.instances).toEqual([expected]);
        expect(await store.get(s.id('a'))).toEqual({ ...expected, waits: [] });
      });

      it('claim: takes the lowest priority first, then the oldest wakeAt, then createdAt, then id', async () => {
        const s = testScope();
        const order = ['p', 'w1', 'c1', 'c2', 'i-a', 'i-b', 'q'];
        const specs = {
          q: { priority: 2, wakeAt: T, now: T },
          'i-b': { wakeAt: T + 30, now: T + 7 },
          c2: { wakeAt: T + 20, now: T + 6 },
          p: { priority: -1, wakeAt: T + 50, now: T + 50 },
          'i-a': { wakeAt: T + 30, now: T + 7 },
          w1: { wakeAt: T + 10, now: T + 40 },
          c1: { wakeAt: T + 20, now: T + 5 },
        };
        for (const [name, spec] of Object.entries(specs)) await store.create(newInstance(s.id(name), s.workflow, spec));
        const taken: string[] = [];
        for (const _ of order) {
          const claim = await store.claim(claimRequest(s.workflow, { now: T + 100, limit: 1 }));
          taken.push(...claim.instances.map((i) => i.id));
        }
        expect(taken).toEqual(order.map(s.id));
      });

      it('claim: takes only unfinished instances whose wakeAt is not null and <= now', async () => {
        const s = testScope();
        await settle(store, newInstance(s.id('suspended'), s.workflow), 'suspended', { wakeAt: null });
        for (const status of FINISHED_STATUSES) await settle(store, newInstance(s.id(status), s.workflow), status);
        await store.create(newInstance(s.id('due'), s.workflow, { wakeAt: T + 500 }));
        await store.create(newInstance(s.id('later'), s.workflow, { wakeAt: T + 501 }));
        await settle(store, newInstance(s.id('timer'), `${s.workflow}-t`), 'suspended', { wakeAt: T + 400 });
        const claim = await store.claim(
          claimRequest(s.workflow, { now: T + 500, workflows: [{ name: s.workflow, version: 1 }, { name: `${s.workflow}-t`, version: 1 }] }),
        );
        expect(idsOf(claim)).toEqual([s.id('due'), s.id('timer')].sort());
      });

      it('claim: takes only the listed workflow/version pairs', async () => {
        const s = testScope();
        for (const version of [1, 2, 3]) await store.create(newInstance(s.id(`v${version}`), s.workflow, { version }));
        await store.create(newInstance(s.id('other'), `${s.workflow}-other`));
        const claim = await store.claim(
          claimRequest(s.workflow, { workflows: [{ name: s.workflow, version: 1 }, { name: s.workflow, version: 3 }] }),
        );
        expect(idsOf(claim)).toEqual([s.id('v1'), s.id('v3')]);
      });

      it('claim: passes over a live lease (leaseUntil >= now) and takes over a lapsed one', async () => {
        const s = testScope();
        await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        expect((await store.claim(claimRequest(s.workflow, { now: T + 1_000 }))).instances).toEqual([]);
        const request = claimRequest(s.workflow, { now: T + 1_001, owner: 'worker-2' });
        const claim = await store.claim(request);
        expect(claim.instances).toHaveLength(1);
        expect(claim.instances[0]).toMatchObject({ leaseToken: request.token, leaseOwner: 'worker-2', runs: 2, status: 'running' });
      });

      it('claim: a compensating instance keeps its status; pending, suspended and running ones become running', async () => {
        const s = testScope();
        await settle(store, newInstance(s.id('compensating'), s.workflow), 'compensating', { wakeAt: T + 10 });
        await settle(store, newInstance(s.id('suspended'), s.workflow), 'suspended', { wakeAt: T + 10 });
        await lease(store, newInstance(s.id('running'), s.workflow), { leaseUntil: T + 5 });
        await store.create(newInstance(s.id('pending'), s.workflow));
        const claim = await store.claim(claimRequest(s.workflow, { now: T + 10 }));
        const statuses = Object.fromEntries(claim.instances.map((i) => [i.id, [i.status, i.runs]]));
        expect(statuses).toEqual({
          [s.id('compensating')]: ['compensating', 2],
          [s.id('suspended')]: ['running', 2],
          [s.id('running')]: ['running', 2],
          [s.id('pending')]: ['running', 1],
        });
      });

      it('claim: returns the last signal id, read after the claim, as lastSignalId', async () => {
        const s = testScope();
        await store.create(newInstance(s.id('a'), s.workflow));
        const sent = await store.signal(newSignal(s.signal('n')));
        const claim = await store.claim(claimRequest(s.workflow));
        expect(claim.lastSignalId).toBe(sent.id);
        const empty = await store.claim(claimRequest(s.workflow));
        expect(empty).toEqual({ instances: [], lastSignalId: sent.id });
      });

      it('claim: takes at most limit instances per call', async () => {
        const s = testScope();
        for (const i of range(5)) await store.create(newInstance(s.id(`i${i}`), s.workflow));
        const counts: number[] = [];
        for (const _ of range(4)) counts.push((await store.claim(claimRequest(s.workflow, { limit: 2 }))).instances.length);
        expect(counts).toEqual([2, 2, 1, 0]);
      });

      it('claim: of 8 concurrent claims (limit 5) over 30 due instances, none returns an instance another returned', async () => {
        const s = testScope();
        await Promise.all(range(30).map((i) => store.create(newInstance(s.id(pad(i)), s.workflow))));
        const requests = range(8).map((i) => claimRequest(s.workflow, { owner: `worker-${i}`, limit: 5 }));
        const claims = await Promise.all(requests.map((request) => store.claim(request)));
        for (const [n, claim] of claims.entries()) {
          for (const instance of claim.instances) {
            expect(await details(instance.id)).toMatchObject({ leaseToken: requests[n]!.token, runs: 1 });
          }
        }
        // A claim may take fewer than fit (rows another claim held were skipped): a last claim sweeps up.
        const sweep = await store.claim(claimRequest(s.workflow, { limit: 100 }));
        const ids = [...claims, sweep].flatMap((claim) => claim.instances.map((i) => i.id));
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids.sort()).toEqual(range(30).map((i) => s.id(pad(i))));
      });

      it('claim: taking over a lapsed lease fences the old holder: its write and renew change nothing', async () => {
        const s = testScope();
        const { token: old } = await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        await store.claim(claimRequest(s.workflow, { now: T + 2_000 }));
        const before = await snapshot(store, s.id('a'));
        expect(await store.renew(s.id('a'), old, T + 50_000)).toBeNull();
        expect(await store.write(s.id('a'), old, { now: T + 2_001, entries: [journalEntry('late')], status: 'completed' })).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
      });
    });

    describe('claim limits', () => {
      const concurrency = (workflow: string, limit: number | null, perKey: number | null) => ({
        limits: [{ workflow, limit, perKey }],
      });

      it('concurrency: at most limit instances of the workflow (every version) hold a live lease', async () => {
        const s = testScope();
        for (const i of range(3)) await store.create(newInstance(s.id(`v1-${i}`), s.workflow, { now: T + i }));
        for (const i of range(2)) await store.create(newInstance(s.id(`v2-${i}`), s.workflow, { version: 2, now: T + 10 + i }));
        const workflows = [{ name: s.workflow, version: 1 }, { name: s.workflow, version: 2 }];
        const rules = concurrency(s.workflow, 2, null);
        const v2only = [{ name: s.workflow, version: 2 }];
        const now = T + 100;
        expect((await store.claim(claimRequest(s.workflow, { now, workflows: v2only, ...rules }))).instances).toHaveLength(2);
        expect((await store.claim(claimRequest(s.workflow, { now, workflows, ...rules }))).instances).toEqual([]);
      });

      it('concurrency: a lapsed lease holds no slot, and a released instance frees its slot', async () => {
        const s = testScope();
        for (const i of range(5)) await store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
        const rules = concurrency(s.workflow, 2, null);
        const first = claimRequest(s.workflow, { now: T + 10, leaseUntil: T + 1_000, ...rules });
        const claimed = (await store.claim(first)).instances;
        expect(claimed.map((i) => i.id).sort()).toEqual([s.id('i0'), s.id('i1')]);
        expect((await store.claim(claimRequest(s.workflow, { now: T + 20, ...rules }))).instances).toEqual([]);
        await store.write(s.id('i0'), first.token, {
          now: T + 30,
          entries: [],
          status: 'completed',
          release: { wakeAt: null, waits: [], signalCursor: 0 },
        });
        const next = await store.claim(claimRequest(s.workflow, { now: T + 40, leaseUntil: T + 1_000, ...rules }));
        expect(next.instances.map((i) => i.id)).toEqual([s.id('i2')]);
        // At T + 1001 every lease has lapsed: two slots are free again.
        const later = await store.claim(claimRequest(s.workflow, { now: T + 1_001, ...rules }));
        expect(later.instances).toHaveLength(2);
      });

      it('concurrency: at most perKey per concurrencyKey; instances without a key count only toward limit', async () => {
        const s = testScope();
        const keys = ['k1', 'k1', 'k2', 'k2', null, null, null];
        for (const [i, key] of keys.entries()) {
          await store.create(newInstance(s.id(`i${i}`), s.workflow, { concurrencyKey: key, now: T + i }));
        }
        const now = T + 100;
        const claim = await store.claim(claimRequest(s.workflow, { now, ...concurrency(s.workflow, 4, 1) }));
        expect(idsOf(claim)).toEqual(['i0', 'i2', 'i4', 'i5'].map(s.id));
        const perKeyOnly = await store.claim(claimRequest(s.workflow, { now, ...concurrency(s.workflow, null, 1) }));
        expect(perKeyOnly.instances.map((i) => i.id)).toEqual([s.id('i6')]);
      });

      it('concurrency: one busy concurrency key never holds back the candidates behind it', async () => {
        const s = testScope();
        await lease(store, newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'busy' }));
        await store.create(newInstance(s.id('b1'), s.workflow, { concurrencyKey: 'busy', priority: -5 }));
        await store.create(newInstance(s.id('b2'), s.workflow, { concurrencyKey: 'busy', priority: -5 }));
        await store.create(newInstance(s.id('free'), s.workflow, { concurrencyKey: 'free', now: T + 100 }));
        const claim = await store.claim(claimRequest(s.workflow, { now: T + 100, limit: 1, ...concurrency(s.workflow, null, 1) }));
        expect(claim.instances.map((i) => i.id)).toEqual([s.id('free')]);
      });

      it('concurrency: a workflow without limits in the request is not limited', async () => {
        const s = testScope();
        const other = `${s.workflow}-free`;
        for (const i of range(3)) await store.create(newInstance(s.id(`l${i}`), s.workflow));
        for (const i of range(3)) await store.create(newInstance(s.id(`f${i}`), other));
        const claim = await store.claim(
          claimRequest(s.workflow, {
            workflows: [{ name: s.workflow, version: 1 }, { name: other, version: 1 }],
            ...concurrency(s.workflow, 1, null),
          }),
        );
        expect(claim.instances.filter((i) => i.workflow === s.workflow)).toHaveLength(1);
        expect(claim.instances.filter((i) => i.workflow === other)).toHaveLength(3);
      });

      it('concurrency: concurrent claims never exceed limit or perKey', async () => {
        const s = testScope();
        const keyed = `${s.workflow}-keyed`;
        await Promise.all(range(20).map((i) => store.create(newInstance(s.id(`l${pad(i)}`), s.workflow))));
        await Promise.all(
          range(16).map((i) => store.create(newInstance(s.id(`k${pad(i)}`), keyed, { concurrencyKey: `key-${i % 4}` }))),
        );
        const limitedClaim = () => store.claim(claimRequest(s.workflow, { limit: 5, ...concurrency(s.workflow, 3, null) }));
        const limited = (await Promise.all(range(8).map(limitedClaim))).flatMap((c) => c.instances);
        expect(limited.length).toBeLessThanOrEqual(3);
        // A claim may take fewer than fit; what's left of the room, a last claim takes, and no more.
        expect([...limited, ...(await limitedClaim()).instances]).toHaveLength(3);
        const keyedClaim = () => store.claim(claimRequest(keyed, { limit: 5, ...concurrency(keyed, null, 1) }));
        const perKey = (await Promise.all(range(8).map(keyedClaim))).flatMap((c) => c.instances);
        const keys = [...perKey, ...(await keyedClaim()).instances].map((i) => i.concurrencyKey);
        expect(keys.sort()).toEqual(['key-0', 'key-1', 'key-2', 'key-3']);
      });

      const rate = (workflow: string, limit: { max: number; duration: number } | null, perKey: typeof limit = null) => ({
        rateLimits: [{ workflow, limit, perKey }],
      });

      it('rate: a window holds at most max claims; it opens at the first claim and ends duration later', async () => {
        const s = testScope();
        for (const i of range(7)) await store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
        const rules = rate(s.workflow, { max: 2, duration: 1_000 });
        const count = async (now: number) =>
          (await store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules }))).instances.length;
        expect(await count(T + 10)).toBe(2);
        expect(await count(T + 500)).toBe(0);
        expect(await count(T + 1_009)).toBe(0);
        expect(await count(T + 1_010)).toBe(2);
        expect(await count(T + 1_500)).toBe(0);
        expect(await count(T + 3_000)).toBe(2);
      });

      it('rate: claims of one window add up across claims', async () => {
        const s = testScope();
        for (const i of range(6)) await store.create(newInstance(s.id(`i${i}`), s.workflow, { now: T + i }));
        const rules = rate(s.workflow, { max: 3, duration: 1_000 });
        const counts: number[] = [];
        for (const at of [10, 20, 30]) {
          counts.push((await store.claim(claimRequest(s.workflow, { now: T + at, limit: 2, ...rules }))).instances.length);
        }
        expect(counts).toEqual([2, 1, 0]);
      });

      it('rate: perKey windows limit each rateLimitKey, keyless instances count only toward the workflow, and a busy key holds back no other', async () => {
        const s = testScope();
        const keys = ['a', 'a', 'a', 'b', null, null];
        for (const [i, key] of keys.entries()) {
          await store.create(newInstance(s.id(`i${i}`), s.workflow, { rateLimitKey: key, now: T + i }));
        }
        const rules = rate(s.workflow, null, { max: 1, duration: 1_000 });
        const ids = async (now: number) => idsOf(await store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, ...rules })));
        expect(await ids(T + 10)).toEqual(['i0', 'i3', 'i4', 'i5'].map(s.id));
        expect(await ids(T + 20)).toEqual([]);
        expect(await ids(T + 1_010)).toEqual([s.id('i1')]);
      });

      it('rate: the workflow window and the key windows apply together', async () => {
        const s = testScope();
        const keys = ['a', 'a', 'b', 'c', 'd'];
        for (const [i, key] of keys.entries()) {
          await store.create(newInstance(s.id(`i${i}`), s.workflow, { rateLimitKey: key, now: T + i }));
        }
        const rules = rate(s.workflow, { max: 3, duration: 1_000 }, { max: 1, duration: 1_000 });
        const claim = await store.claim(claimRequest(s.workflow, { now: T + 10, ...rules }));
        expect(idsOf(claim)).toEqual(['i0', 'i2', 'i3'].map(s.id));
      });

      it('rate: concurrent claims never put more than max claims in a window', async () => {
        const s = testScope();
        const keyed = `${s.workflow}-keyed`;
        await Promise.all(range(20).map((i) => store.create(newInstance(s.id(`w${pad(i)}`), s.workflow))));
        await Promise.all(
          range(15).map((i) => store.create(newInstance(s.id(`k${pad(i)}`), keyed, { rateLimitKey: `key-${i % 3}` }))),
        );
        const ownClaim = () => store.claim(claimRequest(s.workflow, { limit: 3, ...rate(s.workflow, { max: 4, duration: 60_000 }) }));
        const own = (await Promise.all(range(8).map(ownClaim))).flatMap((c) => c.instances);
        expect(own.length).toBeLessThanOrEqual(4);
        // A claim may take fewer than fit; what's left of the window, a last claim takes, and no more.
        expect([...own, ...(await ownClaim()).instances]).toHaveLength(4);
        const keyedClaim = () => store.claim(claimRequest(keyed, { limit: 3, ...rate(keyed, null, { max: 2, duration: 60_000 }) }));
        const perKey = (await Promise.all(range(8).map(keyedClaim))).flatMap((c) => c.instances);
        const keys = [...perKey, ...(await keyedClaim()).instances].map((i) => i.rateLimitKey!);
        expect(keys.sort()).toEqual(['key-0', 'key-0', 'key-1', 'key-1', 'key-2', 'key-2']);
      });
    });

    describe('renew', () => {
      it('renew: with the lease token extends leaseUntil and returns the flags, changing nothing else', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        const before = await details(s.id('a'));
        expect(await store.renew(s.id('a'), token, T + 90_000)).toEqual({ cancelRequested: false, terminateRequested: false });
        expect(await details(s.id('a'))).toEqual({ ...before, leaseUntil: T + 90_000 });
      });

      it('renew: a lapsed lease still renews while nobody claimed the instance since', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        expect(await store.renew(s.id('a'), token, T + 90_000)).not.toBeNull();
        expect((await details(s.id('a'))).leaseUntil).toBe(T + 90_000);
        expect((await store.claim(claimRequest(s.workflow, { now: T + 5_000 }))).instances).toEqual([]);
      });

      it('renew: a stale token, a released lease or an unknown id returns null and changes nothing', async () => {
        const s = testScope();
        const { token, cursor } = await lease(store, newInstance(s.id('a'), s.workflow));
        const before = await snapshot(store, s.id('a'));
        expect(await store.renew(s.id('a'), randomUUID(), T + 90_000)).toBeNull();
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        await store.write(s.id('a'), token, { now: T + 1, entries: [], release: { wakeAt: null, waits: [], signalCursor: cursor } });
        const released = await snapshot(store, s.id('a'));
        expect(await store.renew(s.id('a'), token, T + 90_000)).toBeNull();
        expect(await snapshot(store, s.id('a'))).toEqual(released);
        expect(await store.renew(s.id('missing'), token, T + 90_000)).toBeNull();
      });

      it('renew: returns cancelRequested and terminateRequested as requested', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        await store.requestCancel(s.id('a'), { reason: null, now: T + 1, terminate: false });
        expect(await store.renew(s.id('a'), token, T + 60_000)).toEqual({ cancelRequested: true, terminateRequested: false });
        await store.requestCancel(s.id('a'), { reason: null, now: T + 2, terminate: true });
        expect(await store.renew(s.id('a'), token, T + 60_000)).toEqual({ cancelRequested: true, terminateRequested: true });
      });
    });

    describe('write', () => {
      it('write: a stale token writes nothing (journal, fields, waits, signal) and returns false', async () => {
        const s = testScope();
        const { token: old, cursor } = await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        await store.claim(claimRequest(s.workflow, { now: T + 2_000 }));
        const before = await snapshot(store, s.id('a'));
        const last = await lastSignalId(store);
        const wrote = await store.write(s.id('a'), old, {
          now: T + 2_001,
          entries: [journalEntry('late')],
          status: 'completed',
          output: { late: true },
          customStatus: { stage: 'late' },
          signal: newSignal(s.signal('end'), { dedupeId: 'end-1' }),
          release: { wakeAt: T + 9_000, waits: [{ name: s.signal('n'), key: null }], signalCursor: cursor },
        });
        expect(wrote).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.signals({ name: s.signal('end'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual([]);
        expect(await lastSignalId(store)).toBe(last);
        // The dedupeId was not taken by the failed write.
        expect((await store.signal(newSignal(s.signal('end'), { dedupeId: 'end-1' }))).created).toBe(true);
      });

      it('write: a released lease, a made-up token or an unknown id writes nothing', async () => {
        const s = testScope();
        const { token, cursor } = await lease(store, newInstance(s.id('a'), s.workflow));
        expect(await store.write(s.id('a'), randomUUID(), { now: T + 1, entries: [journalEntry('x')] })).toBe(false);
        await store.write(s.id('a'), token, { now: T + 1, entries: [], release: { wakeAt: null, waits: [], signalCursor: cursor } });
        const before = await snapshot(store, s.id('a'));
        expect(await store.write(s.id('a'), token, { now: T + 2, entries: [journalEntry('x')], status: 'failed' })).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.write(s.id('missing'), token, { now: T + 2, entries: [journalEntry('x')] })).toBe(false);
        expect(await store.get(s.id('missing'))).toBeNull();
      });

      it('write: a lapsed lease still writes while nobody claimed the instance since', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        expect(await store.write(s.id('a'), token, { now: T + 5_000, entries: [journalEntry('late')], status: 'running' })).toBe(true);
        expect((await details(s.id('a'))).journal!.map((e) => e.name)).toEqual(['late']);
      });

      it('write and renew: a lapsed holder racing a takeover claim never changes the instance after the claim (20 rounds)', async () => {
        const s = testScope();
        for (const round of range(20)) {
          const id = s.id(`r${round}`);
          const workflow = `${s.workflow}-${round}`;
          const { token, cursor } = await lease(store, newInstance(id, workflow), { leaseUntil: T + 1_000 });
          const takeover = claimRequest(workflow, { now: T + 2_000 });
          // Landing first, either call leaves the instance claimable at T + 2000; landing second, it must change nothing.
          const late =
            round % 4 < 2
              ? () =>
                  store.write(id, token, {
                    now: T + 2_000,
                    entries: [journalEntry('late')],
                    status: 'suspended',
                    release: { wakeAt: T + 2_000, waits: [], signalCursor: cursor },
                  })
              : () => store.renew(id, token, T + 1_500);
          const claim = () => store.claim(takeover);
          const [claimed] =
            round % 2 === 0
              ? await Promise.all([claim(), late()])
              : await Promise.all([late(), claim()]).then(([l, c]) => [c, l] as const);
          // A claim may skip the row while the holder's call has it locked; then a later claim takes it.
          const winner = claimed.instances.length > 0 ? takeover : claimRequest(workflow, { now: T + 2_000 });
          if (claimed.instances.length === 0) expect((await store.claim(winner)).instances).toHaveLength(1);
          expect(await details(id), `round ${round}`).toMatchObject({
            status: 'running',
            runs: 2,
            leaseToken: winner.token,
            leaseUntil: winner.leaseUntil,
          });
        }
      });

      it('write: upserts entries by name: a new name goes after every existing one, a replaced entry whole and in place', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        await store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('b'), journalEntry('a')] });
        await store.write(s.id('a'), token, {
          now: T + 2,
          entries: [journalEntry('c'), { name: 'b', kind: 'sleep', state: 'waiting', wakeAt: T + 99, createdAt: T, updatedAt: T + 2 }],
        });
        await store.write(s.id('a'), token, { now: T + 3, entries: [journalEntry('a', { value: 'again', attempts: 2 })] });
        const journal = (await details(s.id('a'))).journal!;
        expect(journal.map((e) => e.name)).toEqual(['b', 'a', 'c']);
        expect(journal[0]).toEqual({ name: 'b', kind: 'sleep', state: 'waiting', wakeAt: T + 99, createdAt: T, updatedAt: T + 2 });
        expect(journal[1]).toEqual(journalEntry('a', { value: 'again', attempts: 2 }));
      });

      it('write: a journal-only write leaves updatedAt and every other field unchanged', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        const { journal: _journal, ...before } = await details(s.id('a'));
        expect(await store.write(s.id('a'), token, { now: T + 777, entries: [journalEntry('x')] })).toBe(true);
        const { journal, ...after } = await details(s.id('a'));
        expect(after).toEqual(before);
        expect(journal).toHaveLength(1);
      });

      it('write: sets status, output, error and customStatus when given, leaves them when undefined, and sets updatedAt', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        await store.write(s.id('a'), token, {
          now: T + 10,
          entries: [],
          status: 'compensating',
          output: { total: 5 },
          error: { name: 'Error', message: 'first', stack: 'at x' },
          customStatus: { stage: 'one' },
        });
        expect(await details(s.id('a'))).toMatchObject({
          status: 'compensating',
          output: { total: 5 },
          error: { name: 'Error', message: 'first', stack: 'at x' },
          customStatus: { stage: 'one' },
          updatedAt: T + 10,
        });
        await store.write(s.id('a'), token, { now: T + 20, entries: [], customStatus: null });
        expect(await details(s.id('a'))).toMatchObject({
          status: 'compensating',
          output: { total: 5 },
          error: { name: 'Error', message: 'first' },
          customStatus: null,
          updatedAt: T + 20,
        });
        await store.write(s.id('a'), token, { now: T + 30, entries: [], error: null, output: null, status: 'running' });
        expect(await details(s.id('a'))).toMatchObject({ status: 'running', output: null, error: null, updatedAt: T + 30 });
      });

      it('write: release replaces the waits, clears leaseToken and leaseUntil, keeps leaseOwner and sets wakeAt to release.wakeAt', async () => {
        const s = testScope();
        const { token, cursor } = await lease(store, newInstance(s.id('a'), s.workflow), { owner: 'worker-7' });
        const waits = [{ name: s.signal('x'), key: 'k' }, { name: s.signal('y'), key: null }];
        expect(
          await store.write(s.id('a'), token, {
            now: T + 10,
            entries: [],
            status: 'suspended',
            release: { wakeAt: T + 5_000, waits, signalCursor: cursor },
          }),
        ).toBe(true);
        const parked = await details(s.id('a'));
        // Waits are a set: any order.
        expect([...parked.waits].sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual(waits);
        expect(parked).toMatchObject({
          status: 'suspended',
          leaseToken: null,
          leaseUntil: null,
          leaseOwner: 'worker-7',
          wakeAt: T + 5_000,
          updatedAt: T + 10,
        });
        const claim = await store.claim(claimRequest(s.workflow, { now: T + 5_000 }));
        await store.write(s.id('a'), claim.instances[0]!.leaseToken!, {
          now: T + 5_001,
          entries: [],
          status: 'suspended',
          release: { wakeAt: null, waits: [], signalCursor: claim.lastSignalId },
        });
        expect(await details(s.id('a'))).toMatchObject({ waits: [], wakeAt: null });
      });

      it('write: release wakes now when a signal above release.signalCursor matches a new wait by name and exact key', async () => {
        const s = testScope();
        const name = s.signal('n');
        const a = await lease(store, newInstance(s.id('a'), `${s.workflow}-a`));
        const b = await lease(store, newInstance(s.id('b'), `${s.workflow}-b`));
        await store.signal(newSignal(name, { key: 'k1' }));
        await store.signal(newSignal(name, { key: null }));
        const release = (cursor: number, key: string | null) => ({
          now: T + 50,
          entries: [],
          status: 'suspended' as const,
          release: { wakeAt: null, waits: [{ name: s.signal('other'), key: null }, { name, key }], signalCursor: cursor },
        });
        expect(await store.write(s.id('a'), a.token, release(a.cursor, 'k1'))).toBe(true);
        expect(await store.write(s.id('b'), b.token, release(b.cursor, null))).toBe(true);
        expect((await details(s.id('a'))).wakeAt).toBe(T + 50);
        expect((await details(s.id('b'))).wakeAt).toBe(T + 50);
      });

      it('write: release keeps release.wakeAt when the matching signals are at or below the cursor, or differ in name or key', async () => {
        const s = testScope();
        const name = s.signal('n');
        await store.signal(newSignal(name, { key: 'k1' }));
        const a = await lease(store, newInstance(s.id('a'), `${s.workflow}-a`));
        const b = await lease(store, newInstance(s.id('b'), `${s.workflow}-b`));
        await store.signal(newSignal(name, { key: 'k2' }));
        await store.signal(newSignal(name, { key: null }));
        await store.signal(newSignal(s.signal('other'), { key: 'k1' }));
        const release = (cursor: number, key: string | null) => ({
          now: T + 50,
          entries: [],
          status: 'suspended' as const,
          release: { wakeAt: T + 5_000, waits: [{ name, key }], signalCursor: cursor },
        });
        expect(await store.write(s.id('a'), a.token, release(a.cursor, 'k1'))).toBe(true);
        expect(await store.write(s.id('b'), b.token, release(b.cursor, 'k3'))).toBe(true);
        expect((await details(s.id('a'))).wakeAt).toBe(T + 5_000);
        expect((await details(s.id('b'))).wakeAt).toBe(T + 5_000);
      });

      it('write: release wakes now when the instance has cancelRequested and goes suspended, not when it ends', async () => {
        const s = testScope();
        const a = await lease(store, newInstance(s.id('a'), `${s.workflow}-a`));
        const b = await lease(store, newInstance(s.id('b'), `${s.workflow}-b`));
        await store.requestCancel(s.id('a'), { reason: null, now: T + 1, terminate: false });
        await store.requestCancel(s.id('b'), { reason: null, now: T + 1, terminate: true });
        const write = (status: WorkflowStatus, cursor: number) => ({
          now: T + 60,
          entries: [],
          status,
          release: { wakeAt: null, waits: [], signalCursor: cursor },
        });
        await store.write(s.id('a'), a.token, write('suspended', a.cursor));
        await store.write(s.id('b'), b.token, write('cancelled', b.cursor));
        expect((await details(s.id('a'))).wakeAt).toBe(T + 60);
        expect((await details(s.id('b'))).wakeAt).toBeNull();
      });

      it('write: a signal in the write is stored as signal() stores it: waking waiters and deduplicated', async () => {
        const s = testScope();
        const name = s.signal('child-ended');
        const parent = s.id('parent');
        await settle(store, newInstance(parent, `${s.workflow}-p`), 'suspended', { waits: [{ name, key: 'child-1' }] });
        const child = await lease(store, newInstance(s.id('child'), `${s.workflow}-c`));
        const end = newSignal(name, { key: 'child-1', dedupeId: 'child-1:end', payload: { output: 42 }, now: T + 70 });
        expect(
          await store.write(s.id('child'), child.token, {
            now: T + 70,
            entries: [],
            status: 'completed',
            output: 42,
            signal: end,
            release: { wakeAt: null, waits: [], signalCursor: child.cursor },
          }),
        ).toBe(true);
        expect(await details(parent)).toMatchObject({ wakeAt: T + 70 });
        const all = { name, key: 'child-1', afterId: 0, upToId: Number.MAX_SAFE_INTEGER };
        const stored = await store.signals(all);
        expect(stored).toEqual([{ id: stored[0]!.id, name, key: 'child-1', payload: { output: 42 }, createdAt: T + 70 }]);
        const twin = await lease(store, newInstance(s.id('twin'), `${s.workflow}-t`));
        expect(await store.write(s.id('twin'), twin.token, { now: T + 80, entries: [], signal: end })).toBe(true);
        expect(await store.signals(all)).toHaveLength(1);
      });

      it('write: the store keeps its own copy of entries and values', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        const entry = journalEntry('a', { value: { n: 1 } });
        const output = { n: 1 };
        const waits = [{ name: s.signal('n'), key: null }];
        await store.write(s.id('a'), token, {
          now: T + 1,
          entries: [entry],
          output,
          status: 'suspended',
          release: { wakeAt: null, waits, signalCursor: 0 },
        });
        (entry.value as { n: number }).n = 2;
        output.n = 2;
        waits[0]!.name = 'changed';
        const read = await details(s.id('a'));
        (read.journal![0]!.value as { n: number }).n = 3;
        expect(await details(s.id('a'))).toMatchObject({
          output: { n: 1 },
          waits: [{ name: s.signal('n'), key: null }],
          journal: [{ value: { n: 1 } }],
        });
      });
    });

    describe('signals', () => {
      it('signal: ids increase, starting at 1 on an empty store', async () => {
        const s = testScope();
        const before = await lastSignalId(store);
        const first = await store.signal(newSignal(s.signal('n')));
        const second = await store.signal(newSignal(s.signal('n')));
        const third = await store.signal(newSignal(s.signal('m'), { key: 'k' }));
        if (before === 0) expect(first.id).toBe(1);
        expect(first.id).toBeGreaterThan(before);
        expect(second.id).toBeGreaterThan(first.id);
        expect(third.id).toBeGreaterThan(second.id);
        expect(first).toEqual({ id: first.id, woken: 0, created: true, key: null });
        expect(third.key).toBe('k');
        expect(await lastSignalId(store)).toBe(third.id);
      });

      it('signals: returns the signals with the name and exactly the key, afterId < id <= upToId, in id order', async () => {
        const s = testScope();
        const [n, m] = [s.signal('n'), s.signal('m')];
        const sent = [];
        for (const [i, [name, key]] of ([[n, 'k'], [n, null], [n, 'k'], [m, 'k'], [n, 'K'], [n, 'k'], [n, null]] as const).entries()) {
          sent.push({ ...(await store.signal(newSignal(name, { key, payload: { i }, now: T + i }))), name, i });
        }
        const query = async (name: string, key: string | null, afterId = 0, upToId = Number.MAX_SAFE_INTEGER) =>
          (await store.signals({ name, key, afterId, upToId })).map((r) => (r.payload as { i: number }).i);
        expect(await query(n, 'k')).toEqual([0, 2, 5]);
        expect(await query(n, null)).toEqual([1, 6]);
        expect(await query(n, 'K')).toEqual([4]);
        expect(await query(m, 'k')).toEqual([3]);
        expect(await query(m, null)).toEqual([]);
        expect(await query(n, 'k', sent[0]!.id, sent[5]!.id)).toEqual([2, 5]);
        expect(await query(n, 'k', sent[0]!.id, sent[5]!.id - 1)).toEqual([2]);
        expect(await query(n, 'k', sent[2]!.id, sent[2]!.id)).toEqual([]);
        const [record] = await store.signals({ name: n, key: 'K', afterId: 0, upToId: Number.MAX_SAFE_INTEGER });
        expect(record).toEqual({ id: sent[4]!.id, name: n, key: 'K', payload: { i: 4 }, createdAt: T + 4 });
      });

      it('signal: makes due now every suspended instance waiting for its name and exact key, and counts them', async () => {
        const s = testScope();
        const [n, m] = [s.signal('n'), s.signal('m')];
        const park = (id: string, wakeAt: number | null, waits: Array<{ name: string; key: string | null }>) =>
          settle(store, newInstance(s.id(id), `${s.workflow}-${id}`), 'suspended', { wakeAt, waits });
        await park('a', null, [{ name: m, key: null }, { name: n, key: 'k' }]);
        await park('b', T + 9_999, [{ name: n, key: 'k' }]);
        await park('other-key', null, [{ name: n, key: 'K' }]);
        await park('null-key', null, [{ name: n, key: null }]);
        await park('other-name', null, [{ name: m, key: 'k' }]);
        const untouched = await Promise.all(['other-key', 'null-key', 'other-name'].map((id) => snapshot(store, s.id(id))));
        const result = await store.signal(newSignal(n, { key: 'k', now: T + 100 }));
        expect(result).toMatchObject({ woken: 2, created: true, key: 'k' });
        for (const id of ['a', 'b']) expect(await details(s.id(id))).toMatchObject({ wakeAt: T + 100 });
        expect(await Promise.all(['other-key', 'null-key', 'other-name'].map((id) => snapshot(store, s.id(id))))).toEqual(untouched);
        expect((await store.signal(newSignal(n, { key: null, now: T + 200 }))).woken).toBe(1);
        expect((await details(s.id('null-key'))).wakeAt).toBe(T + 200);
      });

      it('signal: keeps an earlier wakeAt of a waiter that is already due', async () => {
        const s = testScope();
        const n = s.signal('n');
        await settle(store, newInstance(s.id('a'), s.workflow), 'suspended', { wakeAt: T + 50, waits: [{ name: n, key: null }] });
        await store.signal(newSignal(n, { now: T + 100 }));
        expect((await details(s.id('a'))).wakeAt).toBe(T + 50);
      });

      it('signal: wakes only suspended instances', async () => {
        const s = testScope();
        const n = s.signal('n');
        await settle(store, newInstance(s.id('a'), s.workflow), 'suspended', { wakeAt: T + 10, waits: [{ name: n, key: null }] });
        await store.claim(claimRequest(s.workflow, { now: T + 10 }));
        await settle(store, newInstance(s.id('done'), `${s.workflow}-d`), 'completed');
        const before = await Promise.all([snapshot(store, s.id('a')), snapshot(store, s.id('done'))]);
        expect((await store.signal(newSignal(n, { now: T + 20 }))).woken).toBe(0);
        expect(await Promise.all([snapshot(store, s.id('a')), snapshot(store, s.id('done'))])).toEqual(before);
      });

      it('signal: a repeated (name, dedupeId) returns the earlier id and key, created false, and stores and wakes nothing', async () => {
        const s = testScope();
        const n = s.signal('n');
        await settle(store, newInstance(s.id('a'), s.workflow), 'suspended', { waits: [{ name: n, key: 'k2' }] });
        const first = await store.signal(newSignal(n, { key: 'k1', dedupeId: 'd1' }));
        const before = await snapshot(store, s.id('a'));
        const again = await store.signal(newSignal(n, { key: 'k2', dedupeId: 'd1', now: T + 10 }));
        expect(again).toEqual({ id: first.id, woken: 0, created: false, key: 'k1' });
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.signals({ name: n, key: 'k2', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual([]);
        const otherName = await store.signal(newSignal(s.signal('m'), { key: 'k1', dedupeId: 'd1' }));
        expect(otherName.created).toBe(true);
        const plain = await Promise.all([store.signal(newSignal(n)), store.signal(newSignal(n))]);
        expect(plain.map((r) => r.created)).toEqual([true, true]);
        expect(plain[0]!.id).not.toBe(plain[1]!.id);
      });

      it('signal: concurrent signals get unique ids, and signals() returns every one in id order', async () => {
        const s = testScope();
        const n = s.signal('n');
        const results = await Promise.all(range(20).map((i) => store.signal(newSignal(n, { key: 'k', payload: { i } }))));
        const ids = results.map((r) => r.id);
        expect(new Set(ids).size).toBe(20);
        const records = await store.signals({ name: n, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER });
        expect(records.map((r) => r.id)).toEqual([...ids].sort((a, b) => a - b));
        for (const record of records) expect(record.payload).toEqual({ i: ids.indexOf(record.id) });
        expect(await lastSignalId(store)).toBe(Math.max(...ids));
      });

      it('signal: of 10 concurrent signals with one dedupeId exactly one is created, and all return its id', async () => {
        const s = testScope();
        const n = s.signal('n');
        const results = await Promise.all(range(10).map((i) => store.signal(newSignal(n, { key: 'k', dedupeId: 'once', payload: { i } }))));
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.id)).size).toBe(1);
        expect(await store.signals({ name: n, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toHaveLength(1);
      });

      it('signal: a signal racing a suspension that registers a matching wait always leaves the instance due (50 rounds)', async () => {
        const s = testScope();
        for (const round of range(50)) {
          const id = s.id(`r${round}`);
          const name = s.signal(`r${round}`);
          const { token, cursor } = await lease(store, newInstance(id, `${s.workflow}-${round}`));
          const send = () => store.signal(newSignal(name, { key: 'k', now: T + 10 }));
          const suspend = () =>
            store.write(id, token, {
              now: T + 10,
              entries: [journalEntry('wait', { kind: 'signal', state: 'waiting', signal: { name, key: 'k' } })],
              status: 'suspended',
              release: { wakeAt: null, waits: [{ name, key: 'k' }], signalCursor: cursor },
            });
          // Both orders of starting them, so a store that yields mid-call is caught either way.
          const [sent, wrote] =
            round % 2 === 0
              ? await Promise.all([send(), suspend()])
              : await Promise.all([suspend(), send()]).then(([w, r]) => [r, w] as const);
          expect(wrote).toBe(true);
          expect(sent.created).toBe(true);
          const { wakeAt } = await details(id);
          expect(wakeAt, `round ${round}`).not.toBeNull();
          expect(wakeAt!).toBeLessThanOrEqual(T + 10);
        }
      });
    });

    describe('reopen', () => {
      const ended = async (id: string, workflow: string, deadline: number | null = T + 99_000) => {
        const { token, cursor } = await lease(store, newInstance(id, workflow, { deadline }));
        await store.requestCancel(id, { reason: 'stop', now: T + 1, terminate: true });
        await store.write(id, token, {
          now: T + 2,
          entries: [journalEntry('step-1'), journalEntry('step-2')],
          status: 'cancelled',
          error: { name: 'WorkflowTerminatedError', message: 'stop' },
          release: { wakeAt: null, waits: [], signalCursor: cursor },
        });
      };

      it('reopen: upserts entries, sets status and error, clears the cancel flags, makes it due now and sets updatedAt', async () => {
        const s = testScope();
        await ended(s.id('a'), s.workflow);
        const before = await details(s.id('a'));
        const accepted = await store.reopen(s.id('a'), {
          expect: { status: 'cancelled', runs: 1 },
          status: 'compensating',
          error: null,
          entries: [journalEntry('step-2', { compensated: true }), journalEntry('step-3')],
          now: T + 500,
        });
        expect(accepted).toBe(true);
        const after = await details(s.id('a'));
        expect(after).toEqual({
          ...before,
          status: 'compensating',
          error: null,
          cancelRequested: false,
          terminateRequested: false,
          cancelReason: null,
          wakeAt: T + 500,
          updatedAt: T + 500,
          journal: [journalEntry('step-1'), journalEntry('step-2', { compensated: true }), journalEntry('step-3')],
        });
        const claim = await store.claim(claimRequest(s.workflow, { now: T + 500 }));
        expect(claim.instances.map((i) => [i.id, i.status, i.runs])).toEqual([[s.id('a'), 'compensating', 2]]);
      });

      it('reopen: sets deadline when given (null included) and keeps it when undefined', async () => {
        const s = testScope();
        await ended(s.id('a'), `${s.workflow}-a`);
        await ended(s.id('b'), `${s.workflow}-b`);
        const reopen = { expect: { status: 'cancelled' as const, runs: 1 }, status: 'pending' as const, error: null, entries: [], now: T + 5 };
        await store.reopen(s.id('a'), { ...reopen, deadline: T + 123_000 });
        await store.reopen(s.id('b'), { ...reopen, deadline: null });
        expect((await details(s.id('a'))).deadline).toBe(T + 123_000);
        expect((await details(s.id('b'))).deadline).toBeNull();
      });

      it('reopen: changes nothing when the status or runs differ from expect, or the id is unknown', async () => {
        const s = testScope();
        await ended(s.id('a'), s.workflow);
        const before = await snapshot(store, s.id('a'));
        const base = { status: 'pending' as const, error: null, entries: [journalEntry('x')], now: T + 5 };
        expect(await store.reopen(s.id('a'), { ...base, expect: { status: 'failed', runs: 1 } })).toBe(false);
        expect(await store.reopen(s.id('a'), { ...base, expect: { status: 'cancelled', runs: 2 } })).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.reopen(s.id('missing'), { ...base, expect: { status: 'cancelled', runs: 1 } })).toBe(false);
        expect(await store.get(s.id('missing'))).toBeNull();
      });

      it('reopen: changes nothing while a live lease is held, and clears a lapsed lease token', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow), { leaseUntil: T + 1_000 });
        await store.write(s.id('a'), token, { now: T + 10, entries: [], status: 'failed', error: { name: 'Error', message: 'x' } });
        const before = await snapshot(store, s.id('a'));
        const reopen = { expect: { status: 'failed' as const, runs: 1 }, status: 'pending' as const, error: null, entries: [] };
        expect(await store.reopen(s.id('a'), { ...reopen, now: T + 1_000 })).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.reopen(s.id('a'), { ...reopen, now: T + 1_001 })).toBe(true);
        expect(await details(s.id('a'))).toMatchObject({ status: 'pending', leaseToken: null, wakeAt: T + 1_001 });
        expect(await store.renew(s.id('a'), token, T + 60_000)).toBeNull();
        expect(await store.write(s.id('a'), token, { now: T + 1_002, entries: [], status: 'failed' })).toBe(false);
        expect((await details(s.id('a'))).status).toBe('pending');
      });

      it('reopen: of concurrent reopens exactly one lands', async () => {
        const s = testScope();
        await ended(s.id('a'), s.workflow);
        const results = await Promise.all(
          range(10).map((i) =>
            store.reopen(s.id('a'), {
              expect: { status: 'cancelled', runs: 1 },
              status: 'pending',
              error: null,
              entries: [journalEntry(`retry-${i}`)],
              now: T + 100 + i,
            }),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = results.indexOf(true);
        const after = await details(s.id('a'));
        expect(after.updatedAt).toBe(T + 100 + winner);
        expect(after.journal!.map((e) => e.name)).toEqual(['step-1', 'step-2', `retry-${winner}`]);
      });
    });

    describe('delete', () => {
      it('delete: deletes an instance whose status is listed, with its journal and waits', async () => {
        const s = testScope();
        await settle(store, newInstance(s.id('a'), s.workflow), 'completed', { waits: [{ name: s.signal('n'), key: null }] });
        expect(await store.delete(s.id('a'), ['failed', 'completed'])).toBe(true);
        expect(await store.get(s.id('a'))).toBeNull();
        expect(await store.list({ workflow: s.workflow, limit: 10, offset: 0 })).toEqual([]);
        const again = await store.create(newInstance(s.id('a'), s.workflow, { now: T + 10 }));
        expect(again.created).toBe(true);
        expect(await details(s.id('a'))).toMatchObject({ status: 'pending', waits: [], journal: [], createdAt: T + 10 });
      });

      it('delete: refuses, changing nothing, when the status is not listed or the id is unknown', async () => {
        const s = testScope();
        await settle(store, newInstance(s.id('a'), s.workflow), 'failed');
        const before = await snapshot(store, s.id('a'));
        expect(await store.delete(s.id('a'), ['completed', 'cancelled'])).toBe(false);
        expect(await store.delete(s.id('a'), [])).toBe(false);
        expect(await snapshot(store, s.id('a'))).toEqual(before);
        expect(await store.delete(s.id('missing'), [...FINISHED_STATUSES, ...UNFINISHED_STATUSES])).toBe(false);
      });

      it('delete: a lease holder finds the instance gone: its write and renew change nothing', async () => {
        const s = testScope();
        const { token } = await lease(store, newInstance(s.id('a'), s.workflow));
        expect(await store.delete(s.id('a'), ['running'])).toBe(true);
        expect(await store.renew(s.id('a'), token, T + 60_000)).toBeNull();
        expect(await store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('x')], status: 'completed' })).toBe(false);
        expect(await store.get(s.id('a'))).toBeNull();
      });
    });

    describe('purge', () => {
      const all = [...FINISHED_STATUSES];

      it('purge: deletes finished instances of the listed statuses with updatedAt < before, oldest first, up to limit', async () => {
        const t = await purgeSpan(store);
        const s = testScope();
        const ended: Array<[string, WorkflowStatus, number]> = [
          ['c1', 'completed', 30],
          ['c2', 'completed', 10],
          ['c3', 'completed', 20],
          ['f1', 'failed', 15],
          ['x1', 'cancelled', 5],
          ['edge', 'completed', 100],
        ];
        for (const [name, status, at] of ended) {
          await settle(store, newInstance(s.id(name), s.workflow, { now: t }), status, { at: t + at });
        }
        const query = { statuses: ['completed', 'failed'] as WorkflowStatus[], before: t + 100 };
        expect(await store.purge({ ...query, limit: 2 })).toEqual({ instances: 2, signals: 0, rateLimits: 0 });
        const left = async () => (await store.list({ workflow: s.workflow, limit: 100, offset: 0 })).map((i) => i.id).sort();
        expect(await left()).toEqual(['c1', 'c3', 'edge', 'x1'].map(s.id));
        expect((await store.purge({ ...query, limit: 100 })).instances).toBe(2);
        expect(await left()).toEqual(['edge', 'x1'].map(s.id));
        expect(await store.purge({ ...query, limit: 100 })).toEqual({ instances: 0, signals: 0, rateLimits: 0 });
        const recreated = await store.create(newInstance(s.id('c2'), s.workflow, { now: t + 200 }));
        expect(recreated.created).toBe(true);
        expect((await details(s.id('c2'))).journal).toEqual([]);
      });

      it('purge: never deletes unfinished instances, whatever statuses says', async () => {
        const t = await purgeSpan(store);
        const s = testScope();
        await store.create(newInstance(s.id('pending'), `${s.workflow}-p`, { now: t }));
        await lease(store, newInstance(s.id('running'), `${s.workflow}-r`, { now: t }));
        await settle(store, newInstance(s.id('suspended'), `${s.workflow}-s`, { now: t }), 'suspended');
        await settle(store, newInstance(s.id('compensating'), `${s.workflow}-c`, { now: t }), 'compensating');
        const result = await store.purge({ statuses: [...UNFINISHED_STATUSES, ...FINISHED_STATUSES], before: t + 10_000, limit: 100 });
        expect(result.instances).toBe(0);
        for (const status of UNFINISHED_STATUSES) expect((await details(s.id(status))).status).toBe(status);
      });

      it('purge: deletes signals with createdAt < before, lowest id first, up to limit, never the newest', async () => {
        const t = await purgeSpan(store);
        const s = testScope();
        const n = s.signal('n');
        const sent = [];
        for (const i of [1, 2, 3, 4]) sent.push(await store.signal(newSignal(n, { payload: { i }, now: t + i })));
        const left = async () =>
          (await store.signals({ name: n, key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).map((r) => r.id);
        expect(await store.purge({ statuses: all, before: t + 3, limit: 100 })).toEqual({ instances: 0, signals: 2, rateLimits: 0 });
        expect(await left()).toEqual([sent[2]!.id, sent[3]!.id]);
        expect((await store.purge({ statuses: all, before: t + 1_000, limit: 1 })).signals).toBe(1);
        expect(await left()).toEqual([sent[3]!.id]);
        expect((await store.purge({ statuses: all, before: t + 1_000, limit: 100 })).signals).toBe(0);
        expect(await left()).toEqual([sent[3]!.id]);
        const next = await store.signal(newSignal(n, { now: t + 5 }));
        expect(next.id).toBeGreaterThan(sent[3]!.id);
        const { instance } = await store.create(newInstance(s.id('late'), s.workflow, { now: t + 6 }));
        expect(instance.signalCursor).toBe(next.id);
      });

      it('purge: deletes rate-limit windows that ended before before, and leaves open ones counting', async () => {
        const t = await purgeSpan(store);
        const s = testScope();
        const rateLimits = [{ workflow: s.workflow, limit: { max: 5, duration: 1_000 }, perKey: { max: 1, duration: 5_000 } }];
        await store.create(newInstance(s.id('a'), s.workflow, { rateLimitKey: 'k', now: t }));
        await store.create(newInstance(s.id('b'), s.workflow, { rateLimitKey: 'k', now: t + 1 }));
        const claim = (now: number) => store.claim(claimRequest(s.workflow, { now, leaseUntil: now + 60_000, rateLimits }));
        expect((await claim(t + 10)).instances.map((i) => i.id)).toEqual([s.id('a')]);
        expect((await store.purge({ statuses: all, before: t + 500, limit: 100 })).rateLimits).toBe(0);
        expect((await store.purge({ statuses: all, before: t + 2_000, limit: 100 })).rateLimits).toBe(1);
        expect((await claim(t + 2_000)).instances).toEqual([]);
        expect((await store.purge({ statuses: all, before: t + 6_000, limit: 100 })).rateLimits).toBe(1);
        expect((await claim(t + 6_000)).instances.map((i) => i.id)).toEqual([s.id('b')]);
      });

      it('purge: a purge racing reopens never deletes a reopened instance', async () => {
        const t = await purgeSpan(store);
        const s = testScope();
        const ids = range(20).map((i) => s.id(pad(i)));
        for (const [i, id] of ids.entries()) await settle(store, newInstance(id, s.workflow, { now: t }), 'failed', { at: t + 1 + i });
        const reopen = (id: string) =>
          store.reopen(id, { expect: { status: 'failed', runs: 1 }, status: 'pending', error: null, entries: [], now: t + 5_000 });
        const calls: Array<Promise<unknown>> = ids.slice(0, 10).map(reopen);
        calls.push(store.purge({ statuses: ['failed'], before: t + 1_000, limit: 100 }));
        calls.push(...ids.slice(10).map(reopen));
        const results = await Promise.all(calls);
        const purged = results[10] as { instances: number };
        const reopened = [...results.slice(0, 10), ...results.slice(11)] as boolean[];
        for (const [i, id] of ids.entries()) {
          const found = await store.get(id);
          if (reopened[i]) expect(found?.status, id).toBe('pending');
          else expect(found, id).toBeNull();
        }
        expect(purged.instances + reopened.filter(Boolean).length).toBe(20);
      });
    });

    describe('schedules', () => {
      it('saveSchedule: expectRevision null inserts at revision 1 with createdAt = updatedAt = now and no lease', async () => {
        const s = testScope();
        const saved = await store.saveSchedule(scheduleSave(s.id('daily'), s.workflow, { declared: true, paused: true }));
        const expected = {
          id: s.id('daily'),
          workflow: s.workflow,
          declared: true,
          spec: { every: 60_000 },
          input: { from: s.id('daily') },
          paused: true,
          wakeAt: T,
          state: { last: null },
          revision: 1,
          leaseToken: null,
          leaseOwner: null,
          leaseUntil: null,
          createdAt: T,
          updatedAt: T,
        };
        expect(saved).toEqual(expected);
        expect(await store.getSchedule(s.id('daily'))).toEqual(expected);
      });

      it('saveSchedule: expectRevision null refuses, changing nothing, when the id exists', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const before = await store.getSchedule(s.id('a'));
        expect(await store.saveSchedule(scheduleSave(s.id('a'), s.workflow, { spec: { cron: '* * * * *' }, now: T + 5 }))).toBeNull();
        expect(await store.getSchedule(s.id('a'))).toEqual(before);
      });

      it('saveSchedule: a revision replaces the schedule still at it (revision + 1, createdAt kept), else changes nothing', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const replace = scheduleSave(s.id('a'), `${s.workflow}-2`, {
          declared: true,
          spec: { cron: '0 * * * *' },
          input: null,
          paused: true,
          wakeAt: null,
          state: { last: 1 },
          expectRevision: 1,
          now: T + 10,
        });
        const saved = await store.saveSchedule(replace);
        expect(saved).toMatchObject({
          workflow: `${s.workflow}-2`,
          declared: true,
          spec: { cron: '0 * * * *' },
          input: null,
          paused: true,
          wakeAt: null,
          state: { last: 1 },
          revision: 2,
          createdAt: T,
          updatedAt: T + 10,
        });
        expect(await store.saveSchedule({ ...replace, spec: { cron: 'stale' }, now: T + 20 })).toBeNull();
        expect(await store.getSchedule(s.id('a'))).toEqual(saved);
        expect(await store.saveSchedule({ ...replace, id: s.id('missing') })).toBeNull();
        expect(await store.getSchedule(s.id('missing'))).toBeNull();
      });

      it('saveSchedule: releaseLease clears the lease so its holder can no longer writeSchedule; without it the lease stays', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const claim = { owner: 'worker-1', token: randomUUID(), now: T, leaseUntil: T + 30_000, limit: 10, workflows: [s.workflow] };
        expect(await store.claimSchedules(claim)).toHaveLength(1);
        const kept = await store.saveSchedule(scheduleSave(s.id('a'), s.workflow, { expectRevision: 1, now: T + 1 }));
        expect(kept).toMatchObject({ leaseToken: claim.token, leaseUntil: T + 30_000, revision: 2 });
        const released = await store.saveSchedule(scheduleSave(s.id('a'), s.workflow, { expectRevision: 2, releaseLease: true, now: T + 2 }));
        expect(released).toMatchObject({ leaseToken: null, leaseUntil: null, revision: 3 });
        expect(await store.writeSchedule(s.id('a'), claim.token, { now: T + 3, state: { x: 1 }, wakeAt: T + 60_000, release: true })).toBe(false);
        expect(await store.getSchedule(s.id('a'))).toEqual(released);
      });

      it('saveSchedule: of concurrent saves expecting one revision exactly one lands', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const results = await Promise.all(
          range(10).map((i) => store.saveSchedule(scheduleSave(s.id('a'), s.workflow, { expectRevision: 1, state: { i }, now: T + i }))),
        );
        const landed = results.filter((r) => r !== null);
        expect(landed).toHaveLength(1);
        expect(await store.getSchedule(s.id('a'))).toEqual(landed[0]);
        const inserts = await Promise.all(range(10).map(() => store.saveSchedule(scheduleSave(s.id('b'), s.workflow))));
        expect(inserts.filter((r) => r !== null)).toHaveLength(1);
      });

      it('getSchedule and listSchedules: null for an unknown id; filter by workflow and declared, order by id, page', async () => {
        const s = testScope();
        expect(await store.getSchedule(s.id('missing'))).toBeNull();
        for (const [name, declared, workflow] of [
          ['d', true, s.workflow],
          ['b', false, s.workflow],
          ['a', true, s.workflow],
          ['c', false, s.workflow],
          ['e', true, `${s.workflow}-2`],
        ] as const) {
          await store.saveSchedule(scheduleSave(s.id(name), workflow, { declared }));
        }
        const ids = async (query: { workflow?: string; declared?: boolean; limit?: number; offset?: number }) =>
          (await store.listSchedules({ limit: 100, offset: 0, ...query })).map((r) => r.id.slice(s.prefix.length + 1));
        expect(await ids({ workflow: s.workflow })).toEqual(['a', 'b', 'c', 'd']);
        expect(await ids({ workflow: s.workflow, declared: true })).toEqual(['a', 'd']);
        expect(await ids({ workflow: s.workflow, declared: false })).toEqual(['b', 'c']);
        expect(await ids({ workflow: s.workflow, limit: 2, offset: 1 })).toEqual(['b', 'c']);
        expect(await ids({ workflow: `${s.workflow}-2` })).toEqual(['e']);
        const listed = await store.listSchedules({ workflow: `${s.workflow}-2`, limit: 1, offset: 0 });
        expect(listed).toEqual([await store.getSchedule(s.id('e'))]);
      });

      it('deleteSchedule: deletes it, or only at the given revision; refuses an unknown id or another revision', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        await store.saveSchedule(scheduleSave(s.id('b'), s.workflow));
        await store.saveSchedule(scheduleSave(s.id('b'), s.workflow, { expectRevision: 1 }));
        expect(await store.deleteSchedule(s.id('a'))).toBe(true);
        expect(await store.getSchedule(s.id('a'))).toBeNull();
        expect(await store.deleteSchedule(s.id('a'))).toBe(false);
        expect(await store.deleteSchedule(s.id('b'), 1)).toBe(false);
        expect(await store.getSchedule(s.id('b'))).not.toBeNull();
        expect(await store.deleteSchedule(s.id('b'), 2)).toBe(true);
        expect(await store.getSchedule(s.id('b'))).toBeNull();
      });

      it('claimSchedules: leases due schedules (not paused, wakeAt <= now, listed workflow), most overdue first, up to limit, changing only the lease', async () => {
        const s = testScope();
        const other = `${s.workflow}-other`;
        const specs: Array<[string, Partial<WorkflowScheduleSave>]> = [
          ['late', { wakeAt: T + 30 }],
          ['b-tie', { wakeAt: T + 10 }],
          ['a-tie', { wakeAt: T + 10 }],
          ['first', { wakeAt: T }],
          ['paused', { wakeAt: T, paused: true }],
          ['future', { wakeAt: T + 101 }],
          ['never', { wakeAt: null }],
          ['other', { wakeAt: T, workflow: other }],
        ];
        for (const [name, overrides] of specs) await store.saveSchedule(scheduleSave(s.id(name), s.workflow, overrides));
        const before = await store.getSchedule(s.id('first'));
        const request = (limit: number) => ({ owner: 'worker-3', token: randomUUID(), now: T + 100, leaseUntil: T + 30_100, limit, workflows: [s.workflow] });
        const first = request(2);
        const claimed = await store.claimSchedules(first);
        expect(claimed.map((r) => r.id).sort()).toEqual(['a-tie', 'first'].map(s.id));
        const expected = { ...before, leaseToken: first.token, leaseOwner: 'worker-3', leaseUntil: T + 30_100 };
        expect(claimed.find((r) => r.id === s.id('first'))).toEqual(expected);
        expect(await store.getSchedule(s.id('first'))).toEqual(expected);
        expect((await store.claimSchedules(request(1))).map((r) => r.id)).toEqual([s.id('b-tie')]);
        expect((await store.claimSchedules(request(10))).map((r) => r.id)).toEqual([s.id('late')]);
        expect(await store.claimSchedules(request(10))).toEqual([]);
      });

      it('claimSchedules: passes over a live lease and takes over a lapsed one', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const request = (now: number) => ({ owner: 'w', token: randomUUID(), now, leaseUntil: now + 1_000, limit: 10, workflows: [s.workflow] });
        expect(await store.claimSchedules(request(T))).toHaveLength(1);
        expect(await store.claimSchedules(request(T + 1_000))).toEqual([]);
        const takeover = request(T + 1_001);
        expect((await store.claimSchedules(takeover)).map((r) => r.leaseToken)).toEqual([takeover.token]);
      });

      it('claimSchedules: concurrent claims never return the same schedule', async () => {
        const s = testScope();
        await Promise.all(range(20).map((i) => store.saveSchedule(scheduleSave(s.id(pad(i)), s.workflow))));
        const claim = (limit: number) =>
          store.claimSchedules({ owner: 'w', token: randomUUID(), now: T, leaseUntil: T + 30_000, limit, workflows: [s.workflow] });
        const claims = await Promise.all(range(6).map(() => claim(4)));
        const ids = [...claims.flat(), ...(await claim(100))].map((r) => r.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids).toHaveLength(20);
      });

      it('writeSchedule: the lease holder sets state, wakeAt, revision + 1 and updatedAt; release clears the lease', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const token = randomUUID();
        await store.claimSchedules({ owner: 'w', token, now: T, leaseUntil: T + 30_000, limit: 1, workflows: [s.workflow] });
        const before = (await store.getSchedule(s.id('a')))!;
        expect(await store.writeSchedule(s.id('a'), token, { now: T + 5, state: { last: T }, wakeAt: T + 60_000, release: false })).toBe(true);
        expect(await store.getSchedule(s.id('a'))).toEqual({ ...before, state: { last: T }, wakeAt: T + 60_000, revision: 2, updatedAt: T + 5 });
        expect(await store.writeSchedule(s.id('a'), token, { now: T + 6, state: { last: 1 }, wakeAt: null, release: true })).toBe(true);
        expect(await store.getSchedule(s.id('a'))).toMatchObject({ state: { last: 1 }, wakeAt: null, revision: 3, leaseToken: null, leaseUntil: null });
        expect(await store.writeSchedule(s.id('a'), token, { now: T + 7, state: {}, wakeAt: T, release: true })).toBe(false);
      });

      it('writeSchedule: a stale token or an unknown id writes nothing; a lapsed but unclaimed token still writes', async () => {
        const s = testScope();
        await store.saveSchedule(scheduleSave(s.id('a'), s.workflow));
        const old = randomUUID();
        await store.claimSchedules({ owner: 'w', token: old, now: T, leaseUntil: T + 1_000, limit: 1, workflows: [s.workflow] });
        expect(await store.writeSchedule(s.id('a'), old, { now: T + 2_000, state: { n: 1 }, wakeAt: T, release: false })).toBe(true);
        const fresh = randomUUID();
        await store.claimSchedules({ owner: 'w2', token: fresh, now: T + 3_000, leaseUntil: T + 9_000, limit: 1, workflows: [s.workflow] });
        const before = await store.getSchedule(s.id('a'));
        expect(await store.writeSchedule(s.id('a'), old, { now: T + 3_001, state: { n: 2 }, wakeAt: null, release: true })).toBe(false);
        expect(await store.getSchedule(s.id('a'))).toEqual(before);
        expect(await store.writeSchedule(s.id('missing'), old, { now: T, state: {}, wakeAt: null, release: false })).toBe(false);
      });

      it('schedules: the store keeps its own copy of spec, input and state', async () => {
        const s = testScope();
        const save = scheduleSave(s.id('a'), s.workflow, { spec: { every: 1 }, input: { n: 1 }, state: { n: 1 } });
        const saved = (await store.saveSchedule(save))!;
        (save.spec as { every: number }).every = 2;
        (saved.input as { n: number }).n = 2;
        const read = (await store.getSchedule(s.id('a')))!;
        (read.state as { n: number }).n = 2;
        expect(await store.getSchedule(s.id('a'))).toMatchObject({ spec: { every: 1 }, input: { n: 1 }, state: { n: 1 } });
      });
    });
  });
}
