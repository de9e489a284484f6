import { randomUUID } from 'node:crypto';
import {
  BASE_TIME as T,
  claimRequest,
  details,
  idsOf,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  range,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** `create`: the new instance with its defaults, a lease taken at creation, idempotent repeats and concurrent creates of one id. */
export function createContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('create', () => {
    it('create: inserts a pending instance due at now, with every default', async () => {
      const s = testScope();
      const cursor = await lastSignalId(suite.store);
      const { instance, created } = await suite.store.create(newInstance(s.id('a'), s.workflow));
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
        timeout: null,
        wakeAt: T,
        runs: 0,
        signalCursor: cursor,
        leaseToken: null,
        leaseOwner: null,
        leaseUntil: null,
        cancelRequested: false,
        terminateRequested: false,
        cancelReason: null,
        traceContext: null,
        createdAt: T,
        updatedAt: T,
      });
      expect(await suite.store.get(s.id('a'))).toEqual({ ...instance, waits: [] });
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
        timeout: 81_395_000,
        wakeAt: T + 5_000,
      });
      const { instance } = await suite.store.create(init);
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
        timeout: 81_395_000,
        wakeAt: T + 5_000,
        createdAt: T,
      });
      const workflows = [{ name: s.workflow, version: 3 }];
      expect((await suite.store.claim(claimRequest(s.workflow, { now: T + 4_999, workflows }))).instances).toEqual([]);
      const claimed = await suite.store.claim(claimRequest(s.workflow, { now: T + 5_000, workflows }));
      expect(claimed.instances.map((i) => i.id)).toEqual([s.id('a')]);
    });

    it('create: creates made together each answer exactly the instance stored (every field, leased or not, awkward payloads)', async () => {
      const s = testScope();
      const lastSignal = await suite.store.signal(newSignal(s.signal('before')));
      const inits = [
        newInstance(s.id('plain'), s.workflow),
        newInstance(s.id('full'), s.workflow, {
          version: 3,
          input: { z: 1, a: [null, -0, 1e21, 2 ** 53, 'é😀\u2028"\\', { '': true }], nested: { deep: { b: 2, a: 1 } } },
          parentId: s.id('parent'),
          parentClose: 'abandon',
          concurrencyKey: 'customer-1',
          rateLimitKey: 'tenant-1',
          priority: -7,
          scheduleId: s.id('schedule'),
          scheduledAt: T - 60_000,
          deadline: T + 86_400_000,
          timeout: 81_395_000,
          wakeAt: T + 5_000,
          traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'a=1' },
        }),
        newInstance(s.id('leased'), s.workflow, {
          input: 'text',
          lease: { token: 'token-1', owner: 'worker-1', leaseUntil: T + 30_000 },
        }),
        newInstance(s.id('null-input'), s.workflow, { input: null }),
      ];
      const results = await Promise.all(inits.map((init) => suite.store.create(init)));
      for (const [i, { instance, created }] of results.entries()) {
        expect(created, inits[i]!.id).toBe(true);
        expect(instance.signalCursor, inits[i]!.id).toBe(lastSignal.id);
        const { waits: _waits, ...stored } = (await suite.store.get(inits[i]!.id))!;
        expect(instance, inits[i]!.id).toStrictEqual(stored);
      }
    });

    it('create: a key holding a NUL character (which no SQL text column keeps) is refused, alone, before anything is stored', async () => {
      const s = testScope();
      const bad = [
        newInstance(s.id('nul\u0000id'), s.workflow),
        newInstance(s.id('nul-workflow'), `${s.workflow}\u0000`),
        newInstance(s.id('nul-key'), s.workflow, { concurrencyKey: 'k\u0000' }),
      ];
      const good = newInstance(s.id('fine'), s.workflow);
      const results = await Promise.all(
        [...bad, good].map((init) =>
          suite.store.create(init).then(
            (result) => result.created,
            (error: unknown) => (error instanceof RangeError && /NUL/.test(error.message) ? 'refused' : error),
          ),
        ),
      );
      expect(results).toEqual(['refused', 'refused', 'refused', true]);
      for (const init of bad) expect(await suite.store.get(init.id.replace('\u0000', ''))).toBeNull();
    });

    it('create: a key holding a lone surrogate (which no SQL store keeps: it would be stored as U+FFFD, so two keys would be one) is refused, alone, before anything is stored', async () => {
      const s = testScope();
      const bad = [
        newInstance(s.id('half-\ud800'), s.workflow, { input: 'a' }),
        newInstance(s.id('half-\udc00'), s.workflow, { input: 'b' }),
        newInstance(s.id('surrogate-workflow'), `${s.workflow}\ud83d`),
        newInstance(s.id('surrogate-key'), s.workflow, { concurrencyKey: 'k\udfff', rateLimitKey: 'r\ud800' }),
        newInstance(s.id('surrogate-parent'), s.workflow, { parentId: s.id('p\udc00') }),
      ];
      const good = newInstance(s.id('pair-\ud83d\ude00'), s.workflow);
      const results = await Promise.all(
        [...bad, good].map((init) =>
          suite.store.create(init).then(
            (result) => result.created,
            (error: unknown) => (error instanceof RangeError && /surrogate/.test(error.message) ? 'refused' : error),
          ),
        ),
      );
      expect(results).toEqual(['refused', 'refused', 'refused', 'refused', 'refused', true]);
      expect((await suite.store.get(good.id))?.id).toBe(good.id);
      for (const id of [
        s.id('half-\ufffd'),
        s.id('surrogate-workflow'),
        s.id('surrogate-key'),
        s.id('surrogate-parent'),
      ]) {
        expect(await suite.store.get(id)).toBeNull();
      }
    });

    it("create: an input holding a NUL character (which PostgreSQL can't read as text) is refused, alone, before anything is stored", async () => {
      const s = testScope();
      const inits = [
        newInstance(s.id('nul-value'), s.workflow, { input: { text: 'a\u0000b' } }),
        newInstance(s.id('nul-key'), s.workflow, { input: { 'k\u0000': 1 } }),
        newInstance(s.id('fine'), s.workflow),
      ];
      const results = await Promise.all(
        inits.map((init) =>
          suite.store.create(init).then(
            (result) => result.created,
            (error: unknown) => (error instanceof Error && /NUL/.test(error.message) ? 'refused' : error),
          ),
        ),
      );
      expect(results).toEqual(['refused', 'refused', true]);
      expect(await suite.store.get(s.id('nul-value'))).toBeNull();
      expect(await suite.store.get(s.id('nul-key'))).toBeNull();
    });

    it('create: large creates made together each land (no statement too large for the server)', async () => {
      const s = testScope();
      // 6 MB of input each, 30 MB together.
      const inits = range(5).map((i) =>
        newInstance(s.id(`big-${i}`), s.workflow, { input: { i, text: `${i}`.repeat(6_000_000) } }),
      );
      const results = await Promise.all(inits.map((init) => suite.store.create(init)));
      expect(results.map((result) => result.created)).toEqual(inits.map(() => true));
      for (const init of inits) expect((await suite.store.get(init.id))?.input, init.id).toEqual(init.input);
    });

    it('create: an existing id returns the stored instance unchanged, with created false', async () => {
      const s = testScope();
      await lease(suite.store, newInstance(s.id('a'), s.workflow));
      const before = await snapshot(suite.store, s.id('a'));
      const again = await suite.store.create(
        newInstance(s.id('a'), `${s.workflow}-other`, { input: { other: true }, priority: 9, now: T + 1_000 }),
      );
      expect(again.created).toBe(false);
      const { waits: _waits, journal: _journal, ...stored } = before!;
      expect(again.instance).toEqual(stored);
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
    });

    it('create: signalCursor is the last signal id when the instance is created', async () => {
      const s = testScope();
      const { instance: early } = await suite.store.create(newInstance(s.id('early'), s.workflow));
      const sent = await suite.store.signal(newSignal(s.signal('n')));
      const { instance: late } = await suite.store.create(newInstance(s.id('late'), s.workflow));
      expect(early.signalCursor).toBeLessThan(sent.id);
      expect(late.signalCursor).toBe(sent.id);
    });

    it('create: of concurrent creates of one id exactly one creates, and every call returns that instance', async () => {
      const s = testScope();
      const results = await Promise.all(
        range(10).map((i) => suite.store.create(newInstance(s.id('a'), s.workflow, { input: { attempt: i } }))),
      );
      const winners = results.filter((r) => r.created);
      expect(winners).toHaveLength(1);
      for (const result of results) expect(result.instance).toEqual(winners[0]!.instance);
      expect((await details(suite.store, s.id('a'))).input).toEqual(winners[0]!.instance.input);
    });

    it('create: with a lease, starts the instance claimed (running, runs 1, the lease) and no claim takes it while the lease holds', async () => {
      const s = testScope();
      const token = randomUUID();
      const { instance, created } = await suite.store.create(
        newInstance(s.id('a'), s.workflow, { lease: { owner: 'starter', token, leaseUntil: T + 30_000 } }),
      );
      expect(created).toBe(true);
      expect(instance).toMatchObject({
        status: 'running',
        runs: 1,
        leaseToken: token,
        leaseOwner: 'starter',
        leaseUntil: T + 30_000,
      });
      expect(idsOf(await suite.store.claim(claimRequest(s.workflow, { now: T + 30_000 })))).toEqual([]);
      expect(await suite.store.write(s.id('a'), token, { now: T + 1, entries: [journalEntry('step-1')] })).toBe(true);
      // Once the lease lapses, a claim takes it like any other (runs 2).
      const later = await suite.store.claim(claimRequest(s.workflow, { now: T + 30_001 }));
      expect(later.instances.map((i) => [i.id, i.runs])).toEqual([[s.id('a'), 2]]);
    });

    it('create: with a lease, an existing id is returned unchanged and not leased', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const before = await snapshot(suite.store, s.id('a'));
      const again = await suite.store.create(
        newInstance(s.id('a'), s.workflow, {
          lease: { owner: 'starter', token: randomUUID(), leaseUntil: T + 30_000 },
        }),
      );
      expect(again.created).toBe(false);
      expect(again.instance).toMatchObject({ status: 'pending', runs: 0, leaseToken: null });
      expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
    });

    it('create: keeps its own copy: mutating the argument or a result changes nothing stored', async () => {
      const s = testScope();
      const init = newInstance(s.id('a'), s.workflow, { input: { nested: { n: 1 } } });
      const { instance } = await suite.store.create(init);
      (init.input as { nested: { n: number } }).nested.n = 2;
      (instance.input as { nested: { n: number } }).nested.n = 3;
      instance.status = 'completed';
      const read = await details(suite.store, s.id('a'));
      (read.input as { nested: { n: number } }).nested.n = 4;
      read.waits.push({ name: 'x', key: null });
      expect(await details(suite.store, s.id('a'))).toMatchObject({
        status: 'pending',
        input: { nested: { n: 1 } },
        waits: [],
      });
    });
  });
}
