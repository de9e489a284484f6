import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewWorkflowInstance } from '../../src/storage/workflow-store.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

// Calls made together share statements (creates, and writes that take no signal lock): each call
// must still get exactly its own answer, under the contract's rules.
const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore batching');

const instance = (id: string, input: unknown = { id }): NewWorkflowInstance => ({ id, workflow: 'batch.flow', version: 1, input, deadline: null, now: T });

describe.skipIf(!available)('PostgresWorkflowStore: batched statements', () => {
  const fixture = usePostgresStore('batch', { beforeAll, afterAll }, 4);

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
    await Promise.all(Array.from({ length: 40 }, (_, i) => fixture.store.create({ ...instance(`w-${i}`), workflow: 'batch.write' })));
    const token = randomUUID();
    const claim = await fixture.store.claim({ owner: 'me', token, now: T, leaseUntil: T + 60_000, limit: 40, workflows: [{ name: 'batch.write', version: 1 }] });
    expect(claim.instances).toHaveLength(40);
    const entry = (name: string) => ({ name, kind: 'step' as const, state: 'completed' as const, value: name, attempts: 1, createdAt: T, updatedAt: T });
    const outcomes = await Promise.all(
      claim.instances.map((inst, i) =>
        fixture.store.write(inst.id, i % 2 === 0 ? token : 'stale', {
          now: T + 1,
          entries: [entry(`s-${i}`)],
          ...(i % 4 === 0 ? { status: 'completed' as const, output: { i }, release: { wakeAt: null, waits: [], signalCursor: 0 } } : {}),
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

  it('keeps the order of one instance\'s writes made back to back', async () => {
    await fixture.store.create({ ...instance('order-1'), workflow: 'batch.order' });
    const token = randomUUID();
    await fixture.store.claim({ owner: 'me', token, now: T, leaseUntil: T + 60_000, limit: 1, workflows: [{ name: 'batch.order', version: 1 }] });
    const entry = (value: number) => ({ name: 'same', kind: 'step' as const, state: 'completed' as const, value, createdAt: T, updatedAt: T });
    // Not awaited one by one: they reach the store together, and the last must win.
    const writes = await Promise.all([1, 2, 3, 4, 5].map((value) => fixture.store.write('order-1', token, { now: T, entries: [entry(value)] })));
    expect(writes).toEqual([true, true, true, true, true]);
    expect((await fixture.store.get('order-1', { journal: true }))!.journal![0]!.value).toBe(5);
  });
});
