import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import type { NewWorkflowInstance, WorkflowWrite } from '../../src/storage/workflow-store.js';
import { createPool, requirePostgres, usePostgresStore } from '../support/postgres.js';

// Calls made together share statements (creates, and writes that take no signal lock): each call
// must still get exactly its own answer, under the contract's rules.
const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore batching');

const instance = (id: string, input: unknown = { id }): NewWorkflowInstance => ({
  id,
  workflow: 'batch.flow',
  version: 1,
  input,
  deadline: null,
  now: T,
});

describe.skipIf(!available)('PostgresWorkflowStore: batched statements', () => {
  const fixture = usePostgresStore('batch', { beforeAll, afterAll }, 4);
  const stepEntry = (name: string) => ({
    name,
    kind: 'step' as const,
    state: 'completed' as const,
    value: name,
    attempts: 1,
    createdAt: T,
    updatedAt: T,
  });

  /** `count` new instances of `workflow` (ids `${prefix}0`...), all claimed under one new token. */
  async function claimed(workflow: string, prefix: string, count: number) {
    await Promise.all(
      Array.from({ length: count }, (_, i) => fixture.store.create({ ...instance(`${prefix}${i}`), workflow })),
    );
    const token = randomUUID();
    const claim = await fixture.store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: count,
      workflows: [{ name: workflow, version: 1 }],
    });
    expect(claim.instances).toHaveLength(count);
    return { token, instances: claim.instances };
  }

  it('creates each id once when creates of repeated ids arrive together, answering every caller', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `c-${i % 100}`);
    const results = await Promise.all(ids.map((id, i) => fixture.store.create(instance(id, { id, caller: i }))));
    const created = results.filter((r) => r.created);
    expect(created.map((r) => r.instance.id).sort()).toEqual([...new Set(ids)].sort());
    for (const [i, result] of results.entries()) {
      expect(result.instance.id).toBe(ids[i]);
      // Every caller sees the instance as stored: the first caller's input.
      expect(result.instance.input).toEqual({ id: ids[i], caller: i % 100 });
      expect(result.created).toBe(i < 100);
    }
    expect((await fixture.store.list({ workflow: 'batch.flow', limit: 1000, offset: 0 })).length).toBe(100);
  });

  it('lands only the writes whose token holds the lease, when fenced and stale writes share a batch', async () => {
    const claim = await claimed('batch.write', 'w-', 40);
    const { token } = claim;
    const entry = stepEntry;
    const outcomes = await Promise.all(
      claim.instances.map((inst, i) =>
        fixture.store.write(inst.id, i % 2 === 0 ? token : 'stale', {
          now: T + 1,
          entries: [entry(`s-${i}`)],
          ...(i % 4 === 0
            ? { status: 'completed' as const, output: { i }, release: { wakeAt: null, waits: [], signalCursor: 0 } }
            : {}),
        }),
      ),
    );
    for (const [i, inst] of claim.instances.entries()) {
      expect(outcomes[i]).toBe(i % 2 === 0);
      const stored = await fixture.store.get(inst.id, { journal: true });
      expect(stored!.journal!.map((e) => e.name)).toEqual(i % 2 === 0 ? [`s-${i}`] : []);
      expect(stored!.status).toBe(i % 4 === 0 ? 'completed' : 'running');
      expect(stored!.leaseToken).toBe(i % 4 === 0 ? null : token);
      if (i % 4 === 0) expect(stored!.output).toEqual({ i });
    }
  });

  it('lands a batch of journal-only writes under the lease alone, numbering each entry after those before and leaving the rest of the row as it was', async () => {
    const claim = await claimed('batch.journal', 'jo-', 12);
    const { token } = claim;
    const entry = stepEntry;
    const tokenOf = (i: number) => (i % 3 === 0 ? 'stale' : token);
    // Two batches made together: one entry each, then two each (and one repeated name, which replaces).
    const first = await Promise.all(
      claim.instances.map((inst, i) => fixture.store.write(inst.id, tokenOf(i), { now: T + 5, entries: [entry('a')] })),
    );
    const second = await Promise.all(
      claim.instances.map((inst, i) =>
        fixture.store.write(inst.id, tokenOf(i), {
          now: T + 9,
          entries: [entry('b'), { ...entry('a'), value: 'a again' }],
        }),
      ),
    );
    for (const [i, inst] of claim.instances.entries()) {
      expect(first[i]).toBe(i % 3 !== 0);
      expect(second[i]).toBe(i % 3 !== 0);
      const stored = await fixture.store.get(inst.id, { journal: true });
      expect(stored!.journal!.map((e) => [e.name, e.value])).toEqual(
        i % 3 === 0
          ? []
          : [
              ['a', 'a again'],
              ['b', 'b'],
            ],
      );
      expect(stored!.status).toBe('running');
      expect(stored!.leaseToken).toBe(token);
      expect(stored!.updatedAt).toBe(inst.updatedAt);
    }
    // A later write continues the numbering: its entry comes after those of the batches.
    const last = claim.instances[1]!;
    expect(await fixture.store.write(last.id, token, { now: T + 20, entries: [entry('c')] })).toBe(true);
    expect((await fixture.store.get(last.id, { journal: true }))!.journal!.map((e) => e.name)).toEqual(['a', 'b', 'c']);
  });

  it('stores every journal value of a batch exactly as written, awkward JSON text included', async () => {
    const awkward = [
      { b: 1, a: [true, null, -0.5e-7], 'k"ey': 'q"uote\\back\nnew' },
      'unicode: é ü 日本 😀 \u2028\u2029 \u0001',
      ['}]', '",', '\\"'],
      null,
      { nested: { deeper: { deepest: [{}, []] } } },
    ];
    await Promise.all(awkward.map((_, i) => fixture.store.create({ ...instance(`j-${i}`), workflow: 'batch.json' })));
    const token = randomUUID();
    const claim = await fixture.store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: 10,
      workflows: [{ name: 'batch.json', version: 1 }],
    });
    expect(claim.instances).toHaveLength(awkward.length);
    const entry = (name: string, value: unknown) => ({
      name,
      kind: 'step' as const,
      state: 'completed' as const,
      value,
      attempts: 1,
      createdAt: T,
      updatedAt: T,
    });
    // Sent together, so they share a statement; two entries per write.
    const landed = await Promise.all(
      awkward.map((value, i) =>
        fixture.store.write(`j-${i}`, token, {
          now: T + 1,
          entries: [entry('first', value), entry('second', { i, value })],
        }),
      ),
    );
    expect(landed).toEqual(awkward.map(() => true));
    for (const [i, value] of awkward.entries()) {
      const journal = (await fixture.store.get(`j-${i}`, { journal: true }))!.journal!;
      expect(journal).toEqual([entry('first', value), entry('second', { i, value })]);
      // Kept as the text it was written as: key order included.
      expect(JSON.stringify(journal[0]!.value)).toBe(JSON.stringify(value));
    }
  });

  it('leaves each row, journal and end notification as the same writes made one at a time do, whatever mix of parts a batch holds', async () => {
    const error = { name: 'Error', message: 'went wrong' };
    const release = (wakeAt: number | null) => ({ wakeAt, waits: [], signalCursor: 0 });
    type Mixed = { write: Omit<WorkflowWrite, 'now'>; cancel?: boolean };
    // Each batch sent together: parts some of its writes hold and others don't, parts every write
    // holds, with several entries per write or none, and with exactly one each.
    const batches: Mixed[][] = [
      [
        { write: { entries: [stepEntry('a')] } },
        {
          write: {
            entries: [stepEntry('a'), stepEntry('b'), { ...stepEntry('a'), value: 'a again' }],
            customStatus: { progress: 1 },
          },
        },
        { write: { entries: [], status: 'completed', output: { done: true }, error: null, release: release(null) } },
        { write: { entries: [stepEntry('a')], status: 'suspended', release: release(T + 5_000) } },
        { write: { entries: [], status: 'suspended', release: release(T + 5_000) }, cancel: true },
        { write: { entries: [stepEntry('c')], release: release(T) } },
        { write: { entries: [], status: 'failed', error, release: release(null) } },
        { write: { entries: [stepEntry('d')], status: 'compensating', error } },
        { write: { entries: [], output: [1, 2], customStatus: null } },
      ],
      [
        {
          write: {
            entries: [stepEntry('a')],
            status: 'completed',
            output: 1,
            error: null,
            customStatus: 'x',
            release: release(null),
          },
        },
        {
          write: {
            entries: [stepEntry('b')],
            status: 'suspended',
            output: null,
            error,
            customStatus: null,
            release: release(T + 1),
          },
          cancel: true,
        },
        {
          write: {
            entries: [stepEntry('c')],
            status: 'failed',
            output: 'o',
            error,
            customStatus: { s: 1 },
            release: release(T - 1),
          },
        },
      ],
      [
        { write: { entries: [stepEntry('a')] } },
        {
          write: {
            entries: [stepEntry('b')],
            status: 'completed',
            output: { last: true },
            error: null,
            release: release(null),
          },
        },
        { write: { entries: [stepEntry('c')], status: 'suspended', release: release(T + 9) }, cancel: true },
        { write: { entries: [stepEntry('d')], customStatus: [1] } },
      ],
    ];
    const ends: Record<'batched' | 'alone', string[]> = { batched: [], alone: [] };
    const listener = await fixture.pool.connect();
    listener.on('notification', ({ payload }) => {
      const [way] = (payload ?? '').split('-');
      if (way === 'mb' || way === 'ms') ends[way === 'mb' ? 'batched' : 'alone'].push(payload!.slice(3));
    });
    await listener.query(`LISTEN "${fixture.schema}_wake_ended"`);
    try {
      for (const [b, batch] of batches.entries()) {
        const made = {
          batched: await claimed(`batch.mix-${b}-b`, `mb-${b}-`, batch.length),
          alone: await claimed(`batch.mix-${b}-s`, `ms-${b}-`, batch.length),
        };
        for (const [i, { cancel }] of batch.entries()) {
          for (const prefix of ['mb', 'ms']) {
            if (cancel)
              expect(
                await fixture.store.requestCancel(`${prefix}-${b}-${i}`, { reason: 'stop', now: T, terminate: false }),
              ).toBe(true);
            // Every end is awaited but one, which must then notify nothing, batched or not.
            if (`${b}-${i}` !== '0-2')
              expect(await fixture.store.requestEndNotice(`${prefix}-${b}-${i}`, T)).toBe(true);
          }
        }
        const landed = await Promise.all(
          batch.map(({ write }, i) =>
            fixture.store.write(`mb-${b}-${i}`, made.batched.token, { ...write, now: T + 10 }),
          ),
        );
        expect(landed).toEqual(batch.map(() => true));
        for (const [i, { write }] of batch.entries())
          expect(await fixture.store.write(`ms-${b}-${i}`, made.alone.token, { ...write, now: T + 10 })).toBe(true);
        for (const i of batch.keys()) {
          const [batched, alone] = await Promise.all([
            fixture.store.get(`mb-${b}-${i}`, { journal: true }),
            fixture.store.get(`ms-${b}-${i}`, { journal: true }),
          ]);
          const same = (stored: typeof batched, token: string) => ({
            ...stored,
            id: undefined,
            workflow: undefined,
            input: undefined,
            leaseToken: stored!.leaseToken === token ? 'held' : stored!.leaseToken,
          });
          expect(same(batched, made.batched.token), `write ${i} of batch ${b}`).toEqual(same(alone, made.alone.token));
        }
      }
      // Every end is notified at its commit: wait for all of them, then a little for any extra one.
      await vi.waitFor(() => expect([ends.batched.length, ends.alone.length]).toEqual([4, 4]), { timeout: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(ends.batched.sort()).toEqual(ends.alone.sort());
      expect(ends.batched.sort()).toEqual(['0-6', '1-0', '1-2', '2-1']);
    } finally {
      await listener.query('UNLISTEN *');
      listener.release();
    }
  });

  it("keeps the order of one instance's writes made back to back", async () => {
    await fixture.store.create({ ...instance('order-1'), workflow: 'batch.order' });
    const token = randomUUID();
    await fixture.store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: 1,
      workflows: [{ name: 'batch.order', version: 1 }],
    });
    const entry = (value: number) => ({
      name: 'same',
      kind: 'step' as const,
      state: 'completed' as const,
      value,
      createdAt: T,
      updatedAt: T,
    });
    // Not awaited one by one: they reach the store together, and the last must win.
    const writes = await Promise.all(
      [1, 2, 3, 4, 5].map((value) => fixture.store.write('order-1', token, { now: T, entries: [entry(value)] })),
    );
    expect(writes).toEqual([true, true, true, true, true]);
    expect((await fixture.store.get('order-1', { journal: true }))!.journal![0]!.value).toBe(5);
  });
});

describe.skipIf(!available)('PostgresWorkflowStore: batches under contention', () => {
  const fixture = usePostgresStore('batchrace', { beforeAll, afterAll }, 6);
  const raceInstance = (id: string, workflow = 'batch.race'): NewWorkflowInstance => ({
    id,
    workflow,
    version: 1,
    input: { id },
    deadline: null,
    now: T,
  });
  const entry = (name: string, value: unknown = name) => ({
    name,
    kind: 'step' as const,
    state: 'completed' as const,
    value,
    attempts: 1,
    createdAt: T,
    updatedAt: T,
  });

  it('creates once when one create object is passed twice in one batch', async () => {
    const same = raceInstance('same-object');
    const results = await Promise.all([
      fixture.store.create(same),
      fixture.store.create(same),
      fixture.store.create(raceInstance('other-object')),
    ]);
    expect(results.map((r) => r.created)).toEqual([true, false, true]);
  });

  it('does not deadlock when two processes batch-create overlapping ids in opposite orders', async () => {
    const other = createPool({ max: 2 });
    try {
      const second = new PostgresWorkflowStore({ executor: fromPg(other), schema: fixture.schema });
      for (let round = 0; round < 3; round++) {
        const ids = Array.from({ length: 400 }, (_, i) => `dl-${round}-${String(i).padStart(4, '0')}`);
        const [a, b] = await Promise.all([
          Promise.all(ids.map((id) => fixture.store.create(raceInstance(id)))),
          Promise.all([...ids].reverse().map((id) => second.create(raceInstance(id)))),
        ]);
        const createdA = new Set(a.filter((r) => r.created).map((r) => r.instance.id));
        const createdB = b.filter((r) => r.created).map((r) => r.instance.id);
        expect(createdA.size + createdB.length).toBe(ids.length);
        for (const id of createdB) expect(createdA.has(id)).toBe(false);
      }
    } finally {
      await other.end();
    }
  });

  it("keeps the order of one instance's writes when a batched write and a suspension are made back to back", async () => {
    await fixture.store.create(raceInstance('mixed-1', 'batch.mixed'));
    const token = randomUUID();
    const claim = await fixture.store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: 1,
      workflows: [{ name: 'batch.mixed', version: 1 }],
    });
    expect(claim.instances).toHaveLength(1);
    // Another session holds the row, so the first write waits in the database, and the next batched
    // write waits behind it in the store.
    const blocker = await fixture.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${fixture.schema}".instances WHERE id = $1 FOR UPDATE`, ['mixed-1']);
      const writes = [
        fixture.store.write('mixed-1', token, { now: T, entries: [entry('one')] }),
        fixture.store.write('mixed-1', token, { now: T, entries: [entry('two')] }),
        fixture.store.write('mixed-1', token, {
          now: T,
          entries: [entry('three')],
          status: 'suspended',
          release: { wakeAt: null, waits: [{ name: 'go', key: null }], signalCursor: claim.lastSignalId },
        }),
      ];
      await new Promise((resolve) => setTimeout(resolve, 200));
      await blocker.query('COMMIT');
      expect(await Promise.all(writes)).toEqual([true, true, true]);
    } finally {
      blocker.release();
    }
    const stored = await fixture.store.get('mixed-1', { journal: true });
    expect(stored!.journal!.map((e) => e.name)).toEqual(['one', 'two', 'three']);
    expect(stored!.status).toBe('suspended');
    expect(stored!.waits).toEqual([{ name: 'go', key: null }]);
  });
});
