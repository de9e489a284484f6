import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type mysql from 'mysql2/promise';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import type { NewWorkflowInstance, WorkflowScheduleSave } from '../../src/storage/workflow-store.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';
import { lockWaits } from '../support/mysql-lock-waits.js';

// createOccurrence() reads the schedule row with a share lock inside its insert, held until the
// insert commits: a pause (or, for a trigger's create without a token, a delete) that comes while
// the insert is under way waits for it, so once the change returns, nothing it fenced out is
// created any more. The store's sessions are READ
// COMMITTED here, where an INSERT ... SELECT reads its source without locking unless told to.
const T = 1_700_000_000_000;
const available = await requireMysql('MySqlWorkflowStore createOccurrence fence');

describe.skipIf(!available)('MySqlWorkflowStore: createOccurrence against a pause or a delete', () => {
  const schema = freshPrefix('occfence');
  let pool: mysql.Pool;
  let store: MySqlWorkflowStore;

  beforeAll(async () => {
    pool = createMysqlPool({ connectionLimit: 6 });
    pool.pool.on(
      'connection',
      (connection) => void connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'),
    );
    store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    if (pool) await dropTables(pool, schema);
    await pool?.end();
  });

  /** Resolves once `n` transactions on this schema's tables wait for a lock, or `settled()` says to stop looking. */
  async function waiting(n: number, settled: () => boolean = () => false): Promise<void> {
    for (let i = 0; i < 400 && !settled(); i++) {
      if ((await lockWaits(pool)).filter((transaction) => transaction.includes(`${schema}_`)).length >= n) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    if (!settled()) throw new Error(`Fewer than ${n} statements waited for a lock.`);
  }

  /**
   * Another transaction inserts the occurrence's id and keeps it open: the create (fenced by the
   * lease, or with `fence` null by the schedule's existence) stops at that row, after it passed its
   * fence (and locked the schedule row). Then `change` comes, and must wait for the create's commit.
   */
  async function race(fence: 'lease' | null, change: (save: WorkflowScheduleSave) => Promise<unknown>) {
    const id = `s-${randomUUID()}`;
    const save: WorkflowScheduleSave = {
      id,
      workflow: 'w',
      declared: false,
      spec: {},
      input: null,
      paused: false,
      wakeAt: T,
      state: {},
      expectRevision: null,
      releaseLease: false,
      now: T,
    };
    await store.saveSchedule(save);
    const lease = randomUUID();
    expect(
      await store.claimSchedules({
        owner: 'a',
        token: lease,
        now: T,
        leaseUntil: T + 30_000,
        limit: 1,
        workflows: ['w'],
      }),
    ).toHaveLength(1);
    const token = fence === null ? null : lease;
    const init: NewWorkflowInstance = {
      id: `${id}@${T}`,
      workflow: 'w',
      version: 1,
      input: null,
      scheduleId: id,
      scheduledAt: T,
      deadline: null,
      now: T,
    };
    const blocker = await pool.getConnection();
    const order: string[] = [];
    try {
      await blocker.beginTransaction();
      await store.createInTransaction(blocker, init);
      const created = store.createOccurrence(id, token, init).then((r) => (order.push('create'), r));
      await waiting(1);
      // What the change promises: once it returns, the create it raced is stored. Read before
      // \`order\` says it returned, so the blocker (and with it the create) is still held if the
      // change did not wait. (Which of the two answers Node hears first is not the point: the
      // change's backend may answer before the create's, once the create's commit freed it.)
      let storedWhenChanged: boolean | null = null;
      const changed = change(save).then(async (r) => {
        storedWhenChanged = (await store.get(init.id)) !== null;
        order.push('change');
        return r;
      });
      await waiting(2, () => order.includes('change'));
      await blocker.rollback();
      const [result, after] = await Promise.all([created, changed]);
      expect(storedWhenChanged).toBe(true);
      expect(result?.created).toBe(true);
      // After the change, the same fence creates nothing.
      expect(await store.createOccurrence(id, token, { ...init, id: `${id}@${T + 1}` })).toBeNull();
      return after;
    } finally {
      blocker.destroy();
    }
  }

  it('a pause that comes while the create is under way waits until the instance is stored', async () => {
    const saved = await race('lease', (save) =>
      store.saveSchedule({ ...save, paused: true, wakeAt: null, expectRevision: 1, releaseLease: true, now: T + 1 }),
    );
    expect(saved).toMatchObject({ paused: true, leaseToken: null });
  });

  it("a delete that comes while a trigger's create (no token) is under way waits until the instance is stored", async () => {
    expect(await race(null, (save) => store.deleteSchedule(save.id))).toBe(true);
  });
});
