// purge() also deletes `<schema>_locks` rows that no transaction holds (one per signal topic ever
// used, in earlier versions; concurrency locks). The signal protocol (docs/mysql.md) must hold across it: a signal and a suspension that
// could match never miss each other, and a reader of a topic's signals still sees every signal up
// to the cursor, whether the topic's row exists, is being deleted, or was deleted a moment ago.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { topicLock } from '../../src/mysql/mysql-locks.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import {
  claimRequest,
  details,
  journalEntry,
  lease,
  newInstance,
  newSignal,
  range,
  testScope,
} from '../../src/testing/store-fixtures.js';
import { FINISHED_STATUSES } from '../../src/storage/workflow-instance.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';

const available = await requireMysql('lock row purge');
const T = 1_700_000_000_000;
const purgeQuery = { statuses: [...FINISHED_STATUSES], before: 0, limit: 1000 };

describe.skipIf(!available)('purge() of lock rows on MariaDB', () => {
  const fixture = useMysqlStore('locks', { beforeAll, afterAll }, 12);
  const lockRows = async () => {
    const [rows] = await fixture.pool.query(`SELECT COUNT(*) AS n FROM \`${fixture.schema}_locks\``);
    return Number((rows as Array<{ n: number }>)[0]!.n);
  };
  const hasLockRow = async (name: string, key: string | null) => {
    const [rows] = await fixture.pool.query(`SELECT 1 FROM \`${fixture.schema}_locks\` WHERE lock_hash = ?`, [
      topicLock(name, key),
    ]);
    return (rows as unknown[]).length === 1;
  };
  // A claim skips rows another statement holds (SKIP LOCKED), and the purges in a loop briefly hold
  // rows they scan: the lease is claimed again until it is taken, as a worker's next poll would.
  // On a loaded machine the purge loop can hold the row for many claims in a row: after the first
  // ten, each try waits a few milliseconds, for up to 20 s in all.
  const leaseSkipped = async (store: MySqlWorkflowStore, init: ReturnType<typeof newInstance>) => {
    await store.create(init);
    const deadline = Date.now() + 20_000;
    for (let attempt = 0; ; attempt++) {
      const request = claimRequest(init.workflow, {
        now: init.now,
        limit: 1,
        workflows: [{ name: init.workflow, version: init.version }],
      });
      const claim = await store.claim(request);
      if (claim.instances[0]?.id === init.id) return { token: request.token, cursor: claim.lastSignalId };
      if (Date.now() > deadline)
        throw new Error(`Test setup: could not lease ${init.id} in ${attempt + 1} claims over 20 s.`);
      if (attempt >= 10) await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 5));
    }
  };
  const suspend = (store: MySqlWorkflowStore, id: string, token: string, cursor: number, name: string) =>
    store.write(id, token, {
      now: T + 10,
      entries: [journalEntry('wait', { kind: 'signal', state: 'waiting', signal: { name, key: 'k' } })],
      status: 'suspended',
      release: { wakeAt: null, waits: [{ name, key: 'k' }], signalCursor: cursor },
    });

  it('signals and suspensions make no lock rows; purge deletes the rows nobody holds, skips (without waiting for) held ones, and topics work on after', async () => {
    const { store, pool } = fixture;
    const s = testScope();
    const [a, b, c] = [s.signal('a'), s.signal('b'), s.signal('c')];
    const before = await lockRows();
    for (const name of [a, b, c]) await store.signal(newSignal(name, { key: 'k' }));
    const { token: waiting, cursor: waitingCursor } = await lease(
      store,
      newInstance(s.id('v'), s.workflow, { now: T }),
    );
    expect(await suspend(store, s.id('v'), waiting, waitingCursor, a)).toBe(true);
    // Signal topics take no lock rows (docs/mysql.md); rows an earlier version made for them go.
    expect(await lockRows()).toBe(before);
    for (const name of [b, c]) {
      await pool.query(`INSERT IGNORE INTO \`${fixture.schema}_locks\` (lock_hash) VALUES (?)`, [topicLock(name, 'k')]);
    }
    const holding = await pool.getConnection();
    try {
      await holding.beginTransaction();
      await holding.query(`SELECT lock_hash FROM \`${fixture.schema}_locks\` WHERE lock_hash = ? LOCK IN SHARE MODE`, [
        topicLock(b, 'k'),
      ]);
      const started = Date.now();
      await store.purge(purgeQuery);
      expect(Date.now() - started).toBeLessThan(2_000); // InnoDB's lock wait is 50 s: it did not wait
      expect([await hasLockRow(b, 'k'), await hasLockRow(c, 'k')]).toEqual([true, false]);
      await holding.commit();
    } finally {
      holding.destroy();
    }
    await store.purge(purgeQuery);
    expect(await lockRows()).toBe(0);
    // A purged topic: a suspension and a signal meet as on first use.
    const { token, cursor } = await lease(store, newInstance(s.id('w'), s.workflow, { now: T }));
    expect(await suspend(store, s.id('w'), token, cursor, c)).toBe(true);
    await store.purge(purgeQuery);
    expect((await store.signal(newSignal(c, { key: 'k', now: T + 20 }))).woken).toBe(1);
    expect((await details(store, s.id('w'))).wakeAt).toBe(T + 20);
  });

  it('a signal and a suspension that arrive while a purge holds their row wait for it, then still meet', async () => {
    const { pool, schema } = fixture;
    const s = testScope();
    const name = s.signal('held');
    let pause: Promise<void> = Promise.resolve();
    let locked = () => {};
    const purgeLocked = new Promise<void>((resolve) => (locked = resolve));
    // The store's executor, with the purge's transaction paused after it locked the rows it deletes.
    const pausing = (inner: SqlExecutor): SqlExecutor => ({
      query: async (sql, params) => {
        const result = await inner.query(sql, params);
        if (sql.includes('FOR UPDATE SKIP LOCKED') && sql.includes('_locks')) {
          locked();
          await pause;
        }
        return result;
      },
      transaction: (fn) => inner.transaction((tx) => fn(pausing(tx))),
    });
    const store = new MySqlWorkflowStore({ executor: pausing(fromMysql2(pool)), schema });
    const other = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
    await other.signal(newSignal(name, { key: 'k', now: T })); // the topic's row exists
    const { token, cursor } = await lease(other, newInstance(s.id('w'), s.workflow, { now: T }));
    let release = () => {};
    pause = new Promise((resolve) => (release = resolve));
    const purging = store.purge(purgeQuery);
    await purgeLocked;
    const suspended = suspend(other, s.id('w'), token, cursor, name);
    const sent = other.signal(newSignal(name, { key: 'k', now: T + 10 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await purging;
    expect(await suspended).toBe(true);
    expect((await sent).created).toBe(true);
    const { wakeAt } = await details(other, s.id('w'));
    expect(wakeAt).not.toBeNull();
    expect(wakeAt!).toBeLessThanOrEqual(T + 10);
    await other.close();
    await store.close();
  });

  it('signals racing suspensions and readers while purges run in a loop: every waiter is due, every reader sees its signals (40 rounds)', async () => {
    const { store, pool } = fixture;
    const s = testScope();
    const reused = s.signal('reused');
    let purging = true;
    let purges = 0;
    const purger = (async () => {
      while (purging) {
        await store.purge(purgeQuery);
        purges++;
      }
    })();
    try {
      for (const round of range(40)) {
        // Half the rounds on one topic whose row the purges keep deleting, half on a new topic each.
        const name = round % 2 === 0 ? reused : s.signal(`r${round}`);
        const leases: Array<{ token: string; cursor: number }> = [];
        for (const i of range(4))
          leases.push(
            await leaseSkipped(store, newInstance(s.id(`r${round}-${i}`), `${s.workflow}-${round}-${i}`, { now: T })),
          );
        const read = async () => {
          const [rows] = await pool.query(`SELECT COALESCE(MAX(id), 0) AS last FROM \`${fixture.schema}_signals\``);
          const upToId = Number((rows as Array<{ last: number }>)[0]!.last);
          return { upToId, seen: await store.signals({ name, key: 'k', afterId: 0, upToId }) };
        };
        const [sent, reader, ...wrote] = await Promise.all([
          store.signal(newSignal(name, { key: 'k', now: T + 10 })),
          read(),
          ...leases.map(({ token, cursor }, i) => suspend(store, s.id(`r${round}-${i}`), token, cursor, name)),
        ]);
        expect(wrote).toEqual([true, true, true, true]);
        for (const i of range(4)) {
          const { wakeAt } = await details(store, s.id(`r${round}-${i}`));
          expect(wakeAt, `round ${round}, instance ${i}`).not.toBeNull();
        }
        if (sent.id <= reader.upToId)
          expect(
            reader.seen.map((signal) => signal.id),
            `round ${round}`,
          ).toContain(sent.id);
      }
    } finally {
      purging = false;
      await purger;
    }
    expect(purges).toBeGreaterThan(10);
  });
});
