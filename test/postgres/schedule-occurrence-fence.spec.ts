import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewWorkflowInstance, WorkflowScheduleSave } from '../../src/storage/workflow-store.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

// createOccurrence() holds the schedule row (FOR SHARE) until its insert commits: a pause (or, for
// a trigger's create without a token, a delete) that comes while the insert is under way waits for
// it, so once the change returns, nothing it fenced out is created any more.
const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore createOccurrence fence');

describe.skipIf(!available)('PostgresWorkflowStore: createOccurrence against a pause or a delete', () => {
  const fixture = usePostgresStore('occfence', { beforeAll, afterAll }, 6);

  /** Resolves once `n` statements of this schema wait for a lock, or `settled()` says to stop looking. */
  async function waiting(n: number, settled: () => boolean = () => false): Promise<void> {
    for (let i = 0; i < 400 && !settled(); i++) {
      const { rows } = await fixture.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%"${fixture.schema}"%`],
      );
      if (rows[0].n >= n) return;
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
    const { store, pool } = fixture;
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
    const blocker = await pool.connect();
    const order: string[] = [];
    try {
      await blocker.query('BEGIN');
      await store.createInTransaction(blocker, init);
      const created = store.createOccurrence(id, token, init).then((r) => (order.push('create'), r));
      await waiting(1);
      // What the change promises: once it returns, the create it raced is stored. Read before
      // \`order\` says it returned, so the blocker (and with it the create) is still held if the
      // change did not wait. (Which of the two answers Node hears first is not the point: the
      // change's backend may answer before the create's, once the create's commit freed it.)
      let storedWhenChanged: boolean | null = null;
      const changed = change(save).then(async (r) => {
        storedWhenChanged = (await fixture.store.get(init.id)) !== null;
        order.push('change');
        return r;
      });
      await waiting(2, () => order.includes('change'));
      await blocker.query('ROLLBACK');
      const [result, after] = await Promise.all([created, changed]);
      expect(storedWhenChanged).toBe(true);
      expect(result?.created).toBe(true);
      // After the change, the same fence creates nothing.
      expect(await store.createOccurrence(id, token, { ...init, id: `${id}@${T + 1}` })).toBeNull();
      return after;
    } finally {
      blocker.release(true);
    }
  }

  it('a pause that comes while the create is under way waits until the instance is stored', async () => {
    const saved = await race('lease', (save) =>
      fixture.store.saveSchedule({
        ...save,
        paused: true,
        wakeAt: null,
        expectRevision: 1,
        releaseLease: true,
        now: T + 1,
      }),
    );
    expect(saved).toMatchObject({ paused: true, leaseToken: null });
  });

  it("a delete that comes while a trigger's create (no token) is under way waits until the instance is stored", async () => {
    expect(await race(null, (save) => fixture.store.deleteSchedule(save.id))).toBe(true);
  });
});
