import type { WorkflowWrite } from '../../storage/workflow-store.js';
import {
  BASE_TIME as T,
  details,
  journalEntry,
  lastSignalId,
  lease,
  newInstance,
  newSignal,
  settle,
  snapshot,
  testScope,
} from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

/** A value no store can keep: JSON, which every store's payloads are, has no BigInt. */
const UNSTORABLE = { amount: 10n };

/** The parts of a write that carry a payload, and a write whose only unstorable value is in that part. */
const PARTS: Array<{ part: string; bad: (write: WorkflowWrite) => WorkflowWrite }> = [
  {
    part: 'a journal entry (the second of three)',
    bad: (write) => ({
      ...write,
      entries: write.entries.map((entry, i) => (i === 1 ? { ...entry, value: UNSTORABLE } : entry)),
    }),
  },
  { part: 'the output', bad: (write) => ({ ...write, output: UNSTORABLE }) },
  { part: 'the custom status', bad: (write) => ({ ...write, customStatus: UNSTORABLE }) },
  { part: "the signal's payload", bad: (write) => ({ ...write, signal: { ...write.signal!, payload: UNSTORABLE } }) },
];

/**
 * `write` is all or nothing: a write with a part the store can't keep is refused whole (the call
 * rejects), leaving the instance, its journal, its lease and the signals exactly as they were.
 */
export function writeAtomicityContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('write atomicity', () => {
    for (const { part, bad } of PARTS) {
      it(`write: a write with ${part} that can't be stored stores nothing of it, keeps the lease and sends no signal`, async () => {
        const s = testScope();
        const name = s.signal('ended');
        const parent = s.id('parent');
        await settle(suite.store, newInstance(parent, `${s.workflow}-p`), 'suspended', {
          waits: [{ name, key: 'child' }],
        });
        const { token, cursor } = await lease(suite.store, newInstance(s.id('a'), s.workflow));
        expect(
          await suite.store.write(s.id('a'), token, {
            now: T + 1,
            entries: [journalEntry('before')],
            customStatus: { stage: 1 },
          }),
        ).toBe(true);
        const before = await snapshot(suite.store, s.id('a'));
        const parentBefore = await snapshot(suite.store, parent);
        const last = await lastSignalId(suite.store);

        const write: WorkflowWrite = {
          now: T + 10,
          entries: [journalEntry('first'), journalEntry('second'), journalEntry('before', { value: 'replaced' })],
          status: 'completed',
          output: { total: 1 },
          customStatus: { stage: 2 },
          signal: newSignal(name, { key: 'child', dedupeId: 'end-1', now: T + 10 }),
          release: { wakeAt: null, waits: [], signalCursor: cursor },
        };
        const failure = await suite.store.write(s.id('a'), token, bad(write)).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        expect(failure, 'the write must reject').toHaveProperty('error');

        expect(await snapshot(suite.store, s.id('a'))).toEqual(before);
        expect(await snapshot(suite.store, parent)).toEqual(parentBefore);
        expect(await lastSignalId(suite.store)).toBe(last);
        expect(await suite.store.signals({ name, key: 'child', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual(
          [],
        );
        // The lease is still held: it renews, and the same write without the bad part lands whole.
        expect(await suite.store.renew(s.id('a'), token, T + 60_000)).not.toBeNull();
        expect(await suite.store.write(s.id('a'), token, write)).toBe(true);
        const after = await details(suite.store, s.id('a'));
        expect(after).toMatchObject({
          status: 'completed',
          output: { total: 1 },
          customStatus: { stage: 2 },
          leaseToken: null,
        });
        expect(after.journal!.map((entry) => [entry.name, entry.value])).toEqual([
          ['before', 'replaced'],
          ['first', { result: 'first' }],
          ['second', { result: 'second' }],
        ]);
        expect(
          (await suite.store.signals({ name, key: 'child', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).length,
        ).toBe(1);
        expect((await details(suite.store, parent)).wakeAt).toBe(T + 10);
      });
    }

    for (const [what, bad] of [
      ['a step result', { value: 'half a pair: \ud800' }],
      ['an entry name', { name: 'step-\udc00' }],
      ['an entry name (a NUL character)', { name: 'step-\u0000' }],
      ['a step result (a NUL character)', { value: { text: 'nul: \u0000' } }],
      ['a key of a step result (a NUL character)', { value: { 'k\u0000': 1 } }],
    ] as const) {
      it(`write: a string no store keeps (a lone surrogate, a NUL in a key) in ${what} is refused whole, alone: writes of other instances made at the same time land`, async () => {
        const s = testScope();
        const ids = ['a', 'b', 'c'].map(s.id);
        const leases: Array<{ token: string }> = [];
        for (const [i, id] of ids.entries())
          leases.push(await lease(suite.store, newInstance(id, `${s.workflow}-${i}`)));
        // Journal entries alone: the writes every store sends together.
        const results = await Promise.all(
          ids.map((id, i) =>
            suite.store
              .write(id, leases[i]!.token, { now: T + 5, entries: [journalEntry('step', i === 1 ? bad : {})] })
              .then(
                (wrote) => wrote,
                (error: unknown) =>
                  error instanceof Error && /surrogate|well-formed|Unicode|NUL/i.test(error.message)
                    ? 'rejected'
                    : error,
              ),
          ),
        );
        expect(results).toEqual([true, 'rejected', true]);
        for (const [i, id] of ids.entries()) {
          expect(
            (await details(suite.store, id)).journal!.map((entry) => entry.name),
            id,
          ).toEqual(i === 1 ? [] : ['step']);
        }
        // The lease is still held.
        expect(
          await suite.store.write(ids[1]!, leases[1]!.token, { now: T + 6, entries: [journalEntry('step')] }),
        ).toBe(true);
      });
    }

    it('write: large writes made together each land, journal-only and ending ones alike (no statement too large for the server)', async () => {
      const s = testScope();
      const ids = ['a', 'b', 'c', 'd', 'e', 'f'].map(s.id);
      const leases: Array<{ token: string }> = [];
      for (const [i, id] of ids.entries()) leases.push(await lease(suite.store, newInstance(id, `${s.workflow}-${i}`)));
      // 6 MB each, 36 MB together: each alone is well under a journal's limit (10 MB) and a server's packet.
      const big = (i: number) => `${i}`.repeat(6_000_000);
      const results = await Promise.all(
        ids.map((id, i) =>
          suite.store.write(id, leases[i]!.token, {
            now: T + 5,
            entries: [journalEntry('big', { value: big(i) })],
            ...(i >= 3
              ? { status: 'completed' as const, output: { i }, release: { wakeAt: null, waits: [], signalCursor: 0 } }
              : {}),
          }),
        ),
      );
      expect(results).toEqual(ids.map(() => true));
      for (const [i, id] of ids.entries()) {
        const found = await details(suite.store, id);
        expect(
          found.journal!.map((entry) => [entry.name, entry.value === big(i)]),
          id,
        ).toEqual([['big', true]]);
        expect(found.status, id).toBe(i >= 3 ? 'completed' : 'running');
      }
    });

    it('write: an output, error or custom status holding a NUL character is refused whole, alone: ending writes of other instances made at the same time land', async () => {
      const s = testScope();
      const ids = ['a', 'b', 'c', 'd'].map(s.id);
      const leases: Array<{ token: string }> = [];
      for (const [i, id] of ids.entries()) leases.push(await lease(suite.store, newInstance(id, `${s.workflow}-${i}`)));
      const ending = (i: number): WorkflowWrite => ({
        now: T + 5,
        entries: [journalEntry('step')],
        status: i === 2 ? 'failed' : 'completed',
        ...(i === 1
          ? { output: { text: 'a\u0000b' } }
          : i === 2
            ? { error: { name: 'Error', message: 'nul \u0000' } }
            : { output: { i } }),
        ...(i === 3 ? { customStatus: { stage: '\u0000' } } : {}),
        release: { wakeAt: null, waits: [], signalCursor: 0 },
      });
      const results = await Promise.all(
        ids.map((id, i) =>
          suite.store.write(id, leases[i]!.token, ending(i)).then(
            (wrote) => wrote,
            (error: unknown) => (error instanceof Error && /NUL/.test(error.message) ? 'rejected' : error),
          ),
        ),
      );
      expect(results).toEqual([true, 'rejected', 'rejected', 'rejected']);
      for (const [i, id] of ids.entries()) {
        const found = await details(suite.store, id);
        expect([found.status, found.journal!.length], id).toEqual(i === 0 ? ['completed', 1] : ['running', 0]);
      }
    });

    it("write: a write that can't be stored fails alone: writes of other instances made at the same time land", async () => {
      const s = testScope();
      const ids = ['a', 'b', 'c', 'd'].map(s.id);
      const leases: Array<{ token: string }> = [];
      for (const [i, id] of ids.entries()) leases.push(await lease(suite.store, newInstance(id, `${s.workflow}-${i}`)));
      const results = await Promise.all(
        ids.map((id, i) =>
          suite.store
            .write(id, leases[i]!.token, {
              now: T + 5,
              entries: [journalEntry('step')],
              output: i === 1 ? UNSTORABLE : { i },
            })
            .then(
              (wrote) => wrote,
              () => 'rejected',
            ),
        ),
      );
      expect(results).toEqual([true, 'rejected', true, true]);
      for (const [i, id] of ids.entries()) {
        const found = await details(suite.store, id);
        expect(
          found.journal!.map((entry) => entry.name),
          id,
        ).toEqual(i === 1 ? [] : ['step']);
        expect(found.output, id).toEqual(i === 1 ? null : { i });
      }
    });
  });
}
