import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewWorkflowSignal } from '../../src/storage/workflow-store.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

// Signals and suspensions are ordered per topic (signal name and exact key): a transaction holding
// one topic's lock (a stalled sender, an application's open transaction) holds back only the reads
// of that topic; no signal and no suspension waits for it.
const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore topic locks');

const signal = (name: string, key: string | null, payload: unknown = null): NewWorkflowSignal => ({
  name,
  key,
  dedupeId: null,
  payload,
  now: T,
});

/** Rejects when `promise` has not settled within `ms`: a blocked statement fails the test instead of hanging it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not finish within ${ms} ms: it waited for another topic's lock.`)),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe.skipIf(!available)('PostgresWorkflowStore: topic locks', () => {
  const fixture = usePostgresStore('topics', { beforeAll, afterAll }, 6);
  let sequence = 0;

  /** Creates, claims and suspends an instance waiting for `waits`; returns its id. */
  async function suspend(waits: Array<{ name: string; key: string | null }>): Promise<string> {
    const { store } = fixture;
    const workflow = `topics.w${++sequence}`;
    const id = randomUUID();
    await store.create({ id, workflow, version: 1, input: null, deadline: null, now: T });
    const token = randomUUID();
    const claim = await store.claim({
      owner: 'me',
      token,
      now: T,
      leaseUntil: T + 60_000,
      limit: 1,
      workflows: [{ name: workflow, version: 1 }],
    });
    expect(claim.instances.map((i) => i.id)).toEqual([id]);
    const written = await store.write(id, token, {
      now: T,
      entries: [],
      status: 'suspended',
      release: { wakeAt: null, waits, signalCursor: claim.lastSignalId },
    });
    expect(written).toBe(true);
    return id;
  }

  /** Resolves once some statement of this schema waits for an advisory lock (polling pg_stat_activity). */
  async function someoneWaitsForATopic(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await fixture.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE $1`,
        [`%"${fixture.schema}"%`],
      );
      if (rows[0].n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('No statement waited for the held topic.');
  }

  it("lets signals, suspensions and reads of another topic, and suspensions of its own, through while a transaction holds one topic's lock", async () => {
    const { store, pool } = fixture;
    const blockedWaiter = await suspend([{ name: 'paid', key: 'A' }]);
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await store.signalInTransaction(holder, signal('paid', 'A', { from: 'held' }));

      // Another key of the same name is another topic: nothing here waits for the holder.
      const otherWaiter = await within(suspend([{ name: 'paid', key: 'B' }]), 5_000, 'a suspension on paid/B');
      const sent = await within(store.signal(signal('paid', 'B', { n: 1 })), 5_000, 'a signal of paid/B');
      expect(sent).toMatchObject({ created: true, woken: 1 });
      expect((await store.get(otherWaiter))?.wakeAt).toBe(T);
      const read = await within(
        store.signals({ name: 'paid', key: 'B', afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
        5_000,
        'a read of paid/B',
      );
      expect(read.map((r) => r.payload)).toEqual([{ n: 1 }]);
      // The held signal woke nothing yet, as far as anyone else can see.
      expect((await store.get(blockedWaiter))?.wakeAt).toBeNull();
      // A suspension with waits on both topics does not wait for the holder: a signal of one of its
      // topics is being sent, so it is due at once (its next execution reads that topic, and the
      // read waits for the commit).
      const bothId = await within(
        suspend([
          { name: 'paid', key: 'B' },
          { name: 'paid', key: 'A' },
        ]),
        5_000,
        'a suspension on paid/B and paid/A',
      );
      expect((await store.get(bothId))?.wakeAt).toBe(T);
      // A read of the held topic waits for the holder's commit, and then sees its signal.
      let readDone = false;
      const readHeld = store
        .signals({ name: 'paid', key: 'A', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })
        .then((r) => ((readDone = true), r));
      await someoneWaitsForATopic();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(readDone).toBe(false);

      await holder.query('COMMIT');
      const signals = await within(readHeld, 5_000, 'the read of paid/A after the commit');
      expect(signals.map((r) => r.payload)).toEqual([{ from: 'held' }]);
      expect((await store.get(blockedWaiter))?.wakeAt).toBe(T);
    } finally {
      holder.release();
    }
  });

  it('a reader that saw id N waits for a signal of its topic still holding an id below N, then sees it', async () => {
    const { store, pool } = fixture;
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      const held = await store.signalInTransaction(holder, signal('late', 'x', { held: true }));
      // A signal of another topic commits with a higher id: it is what a claim would report as the last id.
      const after = await within(store.signal(signal('late', 'y')), 5_000, 'a signal of late/y');
      expect(after.id).toBeGreaterThan(held.id);

      let done = false;
      const read = store
        .signals({ name: 'late', key: 'x', afterId: 0, upToId: after.id })
        .then((r) => ((done = true), r));
      await someoneWaitsForATopic();
      expect(done).toBe(false);
      await holder.query('COMMIT');
      // Had it not waited, it would have returned nothing and the reader's cursor would have passed the signal.
      expect((await within(read, 5_000, 'the read of late/x')).map((r) => r.id)).toEqual([held.id]);
    } finally {
      holder.release();
    }
  });
});
