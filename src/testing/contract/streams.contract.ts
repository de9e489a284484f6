import { FINISHED_STATUSES } from '../../storage/workflow-instance.js';
import type {
  NewWorkflowStreamItem,
  WorkflowStreamAppend,
  WorkflowStreamRecord,
  WorkflowStore,
} from '../../storage/workflow-store.js';
import { BASE_TIME as T, newInstance, purgeSpan, range, settle, testScope } from '../store-fixtures.js';
import type { ContractSuite } from './contract-suite.js';

const LIMITS = { maxValues: 1000, maxBytes: 1_000_000 };

function value(v: unknown, overrides: Partial<NewWorkflowStreamItem> = {}): NewWorkflowStreamItem {
  return { kind: 'value', value: v, bodyIndex: null, step: null, attempt: null, ...overrides };
}

function append(id: string, stream: string, items: NewWorkflowStreamItem[], more: Partial<WorkflowStreamAppend> = {}) {
  return { id, stream, items, close: false, now: T, limits: LIMITS, ...more };
}

function streamStore(store: WorkflowStore): Required<Pick<WorkflowStore, 'appendStream' | 'readStream'>> {
  if (!store.appendStream || !store.readStream) throw new Error('The store has no streams (appendStream, readStream).');
  return store as Required<Pick<WorkflowStore, 'appendStream' | 'readStream'>>;
}

/** Every item of the stream, read page by page. */
async function readAll(store: WorkflowStore, id: string, stream: string, after = 0): Promise<WorkflowStreamRecord[]> {
  const all: WorkflowStreamRecord[] = [];
  for (;;) {
    const page = await streamStore(store).readStream({ id, stream, after, limit: 7 });
    all.push(...page.items);
    if (page.items.length === 0) return all;
    after = page.items.at(-1)!.seq;
  }
}

/**
 * `appendStream` / `readStream`: ordered, replay-safe appends under a stream lock, bounded, closed
 * for good, and gone with their instance.
 */
export function streamsContract(suite: ContractSuite): void {
  const { describe, it, expect } = suite.test;
  describe('streams', () => {
    it('streams: items get seqs 1, 2, ... in append order, and a page reads those after a seq, up to a limit', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = streamStore(suite.store);
      expect(await store.appendStream(append(s.id('a'), 'out', [value('x'), value({ n: 1 })]))).toEqual({
        seqs: [1, 2],
        refused: null,
      });
      expect(
        await store.appendStream(append(s.id('a'), 'out', [value(3, { step: 'gen', attempt: 2 })], { now: T + 5 })),
      ).toEqual({ seqs: [3], refused: null });
      await store.appendStream(append(s.id('a'), 'other', [value('elsewhere')]));
      const page = await store.readStream({ id: s.id('a'), stream: 'out', after: 1, limit: 10 });
      expect(page).toEqual({
        closed: false,
        lastSeq: 3,
        items: [
          { seq: 2, kind: 'value', value: { n: 1 }, step: null, attempt: null, createdAt: T },
          { seq: 3, kind: 'value', value: 3, step: 'gen', attempt: 2, createdAt: T + 5 },
        ],
      });
      expect(
        (await store.readStream({ id: s.id('a'), stream: 'out', after: 0, limit: 1 })).items.map((i) => i.seq),
      ).toEqual([1]);
      expect((await store.readStream({ id: s.id('a'), stream: 'other', after: 0, limit: 10 })).items).toHaveLength(1);
      expect(await store.readStream({ id: s.id('a'), stream: 'none', after: 0, limit: 10 })).toEqual({
        items: [],
        closed: false,
        lastSeq: 0,
      });
    });

    it('streams: a body write repeated by a replay (same body index) is stored once and answers its first seq', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = streamStore(suite.store);
      await store.appendStream(append(s.id('a'), 'out', [value('a', { bodyIndex: 0 })]));
      await store.appendStream(append(s.id('a'), 'out', [value('from a step', { step: 'st', attempt: 1 })]));
      expect(
        await store.appendStream(
          append(s.id('a'), 'out', [value('a again', { bodyIndex: 0 }), value('b', { bodyIndex: 1 })]),
        ),
      ).toEqual({ seqs: [1, 3], refused: null });
      // Two executions racing the same replayed write: one stores it.
      const raced = await Promise.all(
        range(4).map(() => store.appendStream(append(s.id('a'), 'out', [value('c', { bodyIndex: 2 })]))),
      );
      expect(raced.map((r) => r!.seqs)).toEqual([[4], [4], [4], [4]]);
      expect((await readAll(suite.store, s.id('a'), 'out')).map((i) => i.value)).toEqual([
        'a',
        'from a step',
        'b',
        'c',
      ]);
    });

    it('streams: a close is for good: later values are refused storing nothing, a replayed body write still answers, discards count in no limit', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = streamStore(suite.store);
      await store.appendStream(append(s.id('a'), 'out', [value('a', { bodyIndex: 0 })], { close: true }));
      expect(await store.readStream({ id: s.id('a'), stream: 'out', after: 0, limit: 10 })).toMatchObject({
        closed: true,
        lastSeq: 1,
      });
      expect(await store.appendStream(append(s.id('a'), 'out', [value('late')]))).toEqual({
        seqs: [],
        refused: 'closed',
      });
      expect(
        await store.appendStream(
          append(s.id('a'), 'out', [value('a', { bodyIndex: 0 }), value('b', { bodyIndex: 1 })]),
        ),
      ).toEqual({ seqs: [], refused: 'closed' });
      expect(
        await store.appendStream(append(s.id('a'), 'out', [value('a', { bodyIndex: 0 })], { close: true })),
      ).toEqual({
        seqs: [1],
        refused: null,
      });
      // A close with no items on a stream never written: a stream that is closed and empty.
      expect(await store.appendStream(append(s.id('a'), 'empty', [], { close: true }))).toEqual({
        seqs: [],
        refused: null,
      });
      expect(await store.readStream({ id: s.id('a'), stream: 'empty', after: 0, limit: 10 })).toEqual({
        items: [],
        closed: true,
        lastSeq: 0,
      });
      expect(await readAll(suite.store, s.id('a'), 'out')).toHaveLength(1);
    });

    it('streams: going past maxValues or maxBytes is refused, storing nothing of the append', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = streamStore(suite.store);
      const limits = { maxValues: 3, maxBytes: 12 };
      // '"abc"' is 5 bytes of JSON text, '"é"' 4 ('é' is two bytes in UTF-8): 9 of 12.
      expect(await store.appendStream(append(s.id('a'), 'out', [value('abc'), value('é')], { limits }))).toEqual({
        seqs: [1, 2],
        refused: null,
      });
      expect(await store.appendStream(append(s.id('a'), 'out', [value('yy')], { limits }))).toEqual({
        seqs: [],
        refused: 'bytes',
      });
      const discard = value(null, { kind: 'discard', step: 'st', attempt: 1 });
      expect(await store.appendStream(append(s.id('a'), 'out', [value(1), discard, value(2)], { limits }))).toEqual({
        seqs: [],
        refused: 'values',
      });
      expect(await store.appendStream(append(s.id('a'), 'out', [discard, value(1)], { limits }))).toEqual({
        seqs: [3, 4],
        refused: null,
      });
      expect((await readAll(suite.store, s.id('a'), 'out')).map((i) => [i.kind, i.value])).toEqual([
        ['value', 'abc'],
        ['value', 'é'],
        ['discard', null],
        ['value', 1],
      ]);
    });

    it('streams: an append to an unknown instance stores nothing and answers null', async () => {
      const s = testScope();
      const store = streamStore(suite.store);
      expect(await store.appendStream(append(s.id('missing'), 'out', [value(1)]))).toBeNull();
      await suite.store.create(newInstance(s.id('missing'), s.workflow));
      expect(await store.readStream({ id: s.id('missing'), stream: 'out', after: 0, limit: 10 })).toEqual({
        items: [],
        closed: false,
        lastSeq: 0,
      });
    });

    it("streams: delete() and purge() take an instance's streams with it", async () => {
      const s = testScope();
      const store = streamStore(suite.store);
      const start = await purgeSpan(suite.store);
      await settle(suite.store, newInstance(s.id('d'), s.workflow, { now: start }), 'completed');
      await settle(suite.store, newInstance(s.id('p'), s.workflow, { now: start }), 'completed');
      for (const id of [s.id('d'), s.id('p')]) {
        await store.appendStream(append(id, 'out', [value(1), value(2)], { close: true }));
      }
      expect(await suite.store.delete(s.id('d'), [...FINISHED_STATUSES])).toBe(true);
      expect(
        (await suite.store.purge({ statuses: [...FINISHED_STATUSES], before: start + 1, limit: 100 })).instances,
      ).toBe(1);
      for (const id of [s.id('d'), s.id('p')]) {
        await suite.store.create(newInstance(id, s.workflow, { now: T + 1 }));
        expect(await store.readStream({ id, stream: 'out', after: 0, limit: 10 })).toEqual({
          items: [],
          closed: false,
          lastSeq: 0,
        });
        expect(await store.appendStream(append(id, 'out', [value('new')]))).toEqual({ seqs: [1], refused: null });
      }
    });

    it('streams: concurrent appends get seqs with no gap, and a reader resuming after its last seq never misses one', async () => {
      const s = testScope();
      await suite.store.create(newInstance(s.id('a'), s.workflow));
      const store = streamStore(suite.store);
      const writers = 24;
      let done = false;
      const seen: number[] = [];
      // The reader resumes after the last seq it saw, as `readStream()` does, while the appends land.
      const reader = (async () => {
        let after = 0;
        for (;;) {
          const finished = done;
          const page = await store.readStream({ id: s.id('a'), stream: 'race', after, limit: 5 });
          for (const item of page.items) seen.push(item.seq);
          if (page.items.length > 0) after = page.items.at(-1)!.seq;
          else if (finished) return;
        }
      })();
      const results = await Promise.all(
        range(writers).map((i) => store.appendStream(append(s.id('a'), 'race', [value(i), value(i)]))),
      );
      done = true;
      await reader;
      const seqs = results.flatMap((r) => r!.seqs).sort((a, b) => a - b);
      expect(seqs).toEqual(range(writers * 2).map((i) => i + 1));
      expect(seen).toEqual(range(writers * 2).map((i) => i + 1));
      // Each append's items are consecutive: no other append lands between them.
      for (const r of results) expect(r!.seqs[1]).toBe(r!.seqs[0]! + 1);
    });
  });
}
