// ctx.transaction() on PostgreSQL (and MariaDB, below): the callback's rows and the step's journal entry commit together
// or not at all (rollback on a failure, a lost lease, a timeout), conflicts are retried at once,
// results go through the codec, and a store that can't take part refuses at the call.
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type mysql from 'mysql2/promise';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  InMemoryWorkflowStore,
  Workflow,
  WorkflowTimeoutError,
  type WorkflowContext,
} from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, drizzleTransactions, fromPg } from '../../src/postgres/index.js';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql as drizzleSql } from 'drizzle-orm';

const available = await requirePostgres('ctx.transaction() on PostgreSQL');

/** What the workflows below do, set per test. */
const plan = {
  /** Callback runs per order. */
  calls: new Map<string, number>(),
  /** Run inside the callback after its insert (throw to fail the attempt). */
  after: async (_tx: pg.PoolClient, _attempt: number): Promise<void> => undefined,
  table: '',
  /** The last `tx` a callback got. */
  tx: null as pg.PoolClient | null,
};

@Injectable()
@Workflow('tx.order')
class OrderWorkflow {
  async run(ctx: WorkflowContext, input: { order: string; retries?: number; timeout?: string }) {
    const saved = await ctx.transaction(
      'save-order',
      async (tx: pg.PoolClient, { attempt }) => {
        plan.calls.set(input.order, (plan.calls.get(input.order) ?? 0) + 1);
        await tx.query(`INSERT INTO ${plan.table} (id, attempt) VALUES ($1, $2)`, [input.order, attempt]);
        plan.tx = tx;
        await plan.after(tx, attempt);
        return { order: input.order, attempt };
      },
      { retry: { attempts: input.retries ?? 1, backoff: '1s' }, ...(input.timeout ? { timeout: input.timeout } : {}) },
    );
    await ctx.sleep('settle', '1m');
    return saved;
  }
}

/** What a callback that outlives its step's timeout sent after it (the statement's outcome), per order. */
const late = new Map<string, Promise<string>>();

@Injectable()
@Workflow('tx.late')
class LateWorkflow {
  async run(ctx: WorkflowContext, input: { order: string }) {
    return ctx.transaction(
      'late',
      async (tx: pg.PoolClient) => {
        let settled!: (outcome: string) => void;
        late.set(input.order, new Promise((resolve) => (settled = resolve)));
        // Still on the connection when the timeout passes: the rollback waits behind it.
        await tx.query('SELECT pg_sleep(0.6)');
        await tx.query(`INSERT INTO ${plan.table} (id, attempt) VALUES ($1, 99)`, [input.order]).then(
          () => settled('ran'),
          (error: Error) => settled(error.message),
        );
        return 'done';
      },
      { timeout: '200ms', retry: { attempts: 1 } },
    );
  }
}

@Injectable()
@Workflow('tx.drizzle-late')
class DrizzleLateWorkflow {
  async run(ctx: WorkflowContext, input: { order: string }) {
    return ctx.transaction(
      'late',
      async (tx: { execute(query: unknown): Promise<unknown> }) => {
        let settled!: (outcome: string) => void;
        late.set(input.order, new Promise((resolve) => (settled = resolve)));
        // Still going when the timeout passes, and after the rollback: the connection is back in the pool.
        await new Promise((resolve) => setTimeout(resolve, 600));
        await Promise.resolve()
          .then(() =>
            tx.execute(drizzleSql.raw(`INSERT INTO ${plan.table} (id, attempt) VALUES ('${input.order}', 99)`)),
          )
          .then(
            () => settled('ran'),
            (error: Error) => settled(error.message),
          );
        return 'done';
      },
      { timeout: '200ms', retry: { attempts: 1 } },
    );
  }
}

describe.skipIf(!available)('ctx.transaction() on PostgreSQL', () => {
  const fixture = usePostgresStore('tx_steps', { beforeAll, afterAll });
  let app: TestApp | undefined;

  beforeAll(async () => {
    plan.table = `"${fixture.schema}".orders`;
    await fixture.pool.query(`CREATE TABLE ${plan.table} (id text NOT NULL, attempt int NOT NULL)`);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    plan.calls.clear();
    plan.after = async () => undefined;
  });

  const rows = async (order: string) =>
    (await fixture.pool.query(`SELECT attempt FROM ${plan.table} WHERE id = $1`, [order])).rows;
  const start = async (order: string, input: Record<string, unknown> = {}) => {
    app ??= await createTestApp([OrderWorkflow], { store: fixture.store as never });
    return app.client.start(OrderWorkflow, { order, ...input }, { id: order });
  };

  it('commits the rows and the journal entry together; a replay reads the result and does not run the callback again', async () => {
    const handle = await start('o-commit');
    await app!.worker.drain();
    expect(await rows('o-commit')).toEqual([{ attempt: 1 }]);
    const details = await fixture.store.get('o-commit', { journal: true });
    expect(details!.journal!.find((e) => e.name === 'save-order')).toMatchObject({
      state: 'completed',
      value: { order: 'o-commit', attempt: 1 },
    });
    app!.clock.advance('2m');
    await app!.worker.drain();
    expect(await handle.result()).toEqual({ order: 'o-commit', attempt: 1 });
    expect(plan.calls.get('o-commit')).toBe(1);
    expect(await rows('o-commit')).toEqual([{ attempt: 1 }]);
    // The client went back to the pool with the commit: kept and used later, it refuses.
    await expect(plan.tx!.query('SELECT 1')).rejects.toThrow(/belonged to a transaction that has ended/);
  });

  it('rolls the rows back when the callback fails after writing, and the retry writes them once', async () => {
    plan.after = async (_tx, attempt) => {
      if (attempt === 1 && plan.calls.has('o-retry')) throw new Error('payment provider said no');
    };
    const handle = await start('o-retry', { retries: 2 });
    await app!.worker.drain();
    expect(await rows('o-retry')).toEqual([]);
    expect(
      (await fixture.store.get('o-retry', { journal: true }))!.journal!.find((e) => e.name === 'save-order'),
    ).toMatchObject({ state: 'waiting', attempts: 1 });
    app!.clock.advance('2s');
    await app!.worker.drain();
    app!.clock.advance('2m');
    await app!.worker.drain();
    expect(await handle.result()).toEqual({ order: 'o-retry', attempt: 2 });
    expect(await rows('o-retry')).toEqual([{ attempt: 2 }]);
  });

  it('rolls back when the lease was lost during the callback: nothing of the step commits', async () => {
    plan.after = async () => {
      // Another worker took the instance over meanwhile (its lease token changed).
      await fixture.pool.query(
        `UPDATE "${fixture.schema}".instances SET lease_token = 'someone-else' WHERE id = 'o-lease'`,
      );
    };
    await start('o-lease');
    await app!.worker.drain();
    expect(await rows('o-lease')).toEqual([]);
    const details = await fixture.store.get('o-lease', { journal: true });
    expect(details!.journal!.some((e) => e.name === 'save-order')).toBe(false);
    expect(details!.leaseToken).toBe('someone-else');
  });

  it('runs a transaction that hit a serialization failure again at once, without spending an attempt', async () => {
    let failures = 0;
    plan.after = async (tx) => {
      if (failures++ === 0)
        await tx.query(`DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END $$`);
    };
    const handle = await start('o-conflict', { retries: 1 });
    await app!.worker.drain();
    app!.clock.advance('2m');
    await app!.worker.drain();
    expect(await handle.result()).toEqual({ order: 'o-conflict', attempt: 1 });
    expect(plan.calls.get('o-conflict')).toBe(2);
    expect(await rows('o-conflict')).toEqual([{ attempt: 1 }]);
  });

  it('fails an attempt that outlives its timeout, rolls it back, and bounds its statements in the database', async () => {
    plan.after = async (tx) => {
      await tx.query('SELECT pg_sleep(30)');
    };
    const handle = await start('o-timeout', { timeout: '300ms' });
    const began = Date.now();
    await app!.worker.drain();
    expect(Date.now() - began).toBeLessThan(10_000);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowTimeoutError);
    expect(await rows('o-timeout')).toEqual([]);
  });

  it("runs a step whose timeout is longer than the server's largest statement_timeout (30 days), bounded by that largest", async () => {
    let limit = '';
    plan.after = async (tx) => {
      limit = (await tx.query("SELECT current_setting('statement_timeout') AS limit")).rows[0].limit as string;
    };
    const handle = await start('o-long', { timeout: '30d' });
    await app!.worker.drain();
    expect(limit).toBe('2147483647ms');
    app!.clock.advance('2m');
    await app!.worker.drain();
    expect(await handle.result()).toEqual({ order: 'o-long', attempt: 1 });
    expect(await rows('o-long')).toEqual([{ attempt: 1 }]);
  });

  it('refuses a statement the callback sends after its timeout while the rollback is under way: nothing of it commits', async () => {
    app = await createTestApp([LateWorkflow], { store: fixture.store as never });
    const handle = await app.client.start(LateWorkflow, { order: 'o-late' }, { id: 'o-late' });
    await app.worker.drain();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowTimeoutError);
    const outcome = await late.get('o-late');
    expect(await rows('o-late')).toEqual([]);
    expect(outcome).toMatch(/belonged to a transaction that has ended/);
  });

  it("with Drizzle's handle (the `transactions` option), refuses a statement sent after the timeout: nothing of it commits", async () => {
    const store = new PostgresWorkflowStore({
      executor: fromPg(fixture.pool),
      schema: fixture.schema,
      transactions: drizzleTransactions(drizzle(fixture.pool)),
    });
    app = await createTestApp([DrizzleLateWorkflow], { store: store as never });
    const handle = await app.client.start(DrizzleLateWorkflow, { order: 'o-drizzle-late' }, { id: 'o-drizzle-late' });
    await app.worker.drain();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowTimeoutError);
    const outcome = await late.get('o-drizzle-late');
    expect(await rows('o-drizzle-late')).toEqual([]);
    expect(outcome).toMatch(/Drizzle transaction has ended/);
  });

  it('journals the result through the codec: the journal row holds no plaintext', async () => {
    const codec = new AesGcmPayloadCodec({ key: randomBytes(32), id: 'tx-key' });
    app = await createTestApp([OrderWorkflow], { store: fixture.store as never, codec });
    const handle = await app.client.start(OrderWorkflow, { order: 'o-secret-7731' }, { id: 'o-codec' });
    await app.worker.drain();
    const journal = await fixture.pool.query(
      `SELECT entry::text AS entry FROM "${fixture.schema}".journal WHERE instance_id = 'o-codec' AND name = 'save-order'`,
    );
    expect(journal.rows).toHaveLength(1);
    expect(journal.rows[0].entry).not.toContain('o-secret-7731');
    app.clock.advance('2m');
    await app.worker.drain();
    expect(await handle.result()).toEqual({ order: 'o-secret-7731', attempt: 1 });
  });
});

describe('ctx.transaction() on a store that cannot take part', () => {
  it('fails at the call with an error that names the store and what to use instead', async () => {
    const app = await createTestApp([OrderWorkflow], { store: new InMemoryWorkflowStore() });
    try {
      const handle = await app.client.start(OrderWorkflow, { order: 'o-memory' }, { id: 'o-memory' });
      await app.worker.drain();
      const error = await handle.result().catch((e: unknown) => e as Error);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(
        /ctx\.transaction\("save-order"\) needs a store that runs transactions .*InMemoryWorkflowStore can't\. Use ctx\.step/,
      );
      expect(plan.calls.get('o-memory')).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

const mariadbAvailable = await requireMysql('ctx.transaction() on MariaDB');

/** MariaDB's part: what the same workflow needs there. */
const mariadbPlan = { table: '', steal: false, conflicts: 0, sleep: 0, sessionLimit: null as string | null };

@Injectable()
@Workflow('tx.mariadb-order')
class MariaDbOrderWorkflow {
  async run(ctx: WorkflowContext, input: { order: string; failFirst?: boolean; timeout?: string }) {
    const saved = await ctx.transaction(
      'save-order',
      async (tx: mysql.PoolConnection, { attempt }) => {
        await tx.query(`INSERT INTO ${mariadbPlan.table} (id, attempt) VALUES (?, ?)`, [input.order, attempt]);
        const [[limit]] = await tx.query<mysql.RowDataPacket[]>('SELECT @@SESSION.max_statement_time AS seconds');
        mariadbPlan.sessionLimit = String(limit!.seconds);
        if (mariadbPlan.sleep > 0) await tx.query('SELECT SLEEP(?)', [mariadbPlan.sleep]);
        if (mariadbPlan.conflicts > 0) {
          mariadbPlan.conflicts--;
          // A real deadlock error as the server reports it (ER_LOCK_DEADLOCK, 1213).
          await tx.query(
            "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'Deadlock found when trying to get lock'",
          );
        }
        if (mariadbPlan.steal)
          await mariadbPool!.query(
            `UPDATE ${mariadbStore!.schema}_instances SET lease_token = 'someone-else' WHERE id = ?`,
            [input.order],
          );
        if (input.failFirst && attempt === 1) throw new Error('payment provider said no');
        return { order: input.order, attempt };
      },
      { retry: { attempts: 2, backoff: '1s' }, ...(input.timeout ? { timeout: input.timeout } : {}) },
    );
    await ctx.sleep('settle', '1m');
    return saved;
  }
}

@Injectable()
@Workflow('tx.mariadb-late')
class MariaDbLateWorkflow {
  async run(ctx: WorkflowContext, input: { order: string }) {
    return ctx.transaction(
      'late',
      async (tx: mysql.PoolConnection) => {
        let settled!: (outcome: string) => void;
        late.set(input.order, new Promise((resolve) => (settled = resolve)));
        // Still going when the timeout passes, and after the rollback: the connection is back in the pool.
        await new Promise((resolve) => setTimeout(resolve, 600));
        await tx.query(`INSERT INTO ${mariadbPlan.table} (id, attempt) VALUES (?, 99)`, [input.order]).then(
          () => settled('ran'),
          (error: Error) => settled(error.message),
        );
        return 'done';
      },
      { timeout: '200ms', retry: { attempts: 1 } },
    );
  }
}

let mariadbPool: mysql.Pool | undefined;
let mariadbStore: MySqlWorkflowStore | undefined;

describe.skipIf(!mariadbAvailable)('ctx.transaction() on MariaDB', () => {
  const prefix = freshPrefix('tx_steps');
  let app: TestApp | undefined;

  beforeAll(async () => {
    mariadbPool = createMysqlPool({ connectionLimit: 4 });
    mariadbStore = new MySqlWorkflowStore({ executor: fromMysql2(mariadbPool), schema: prefix });
    await mariadbStore.init();
    mariadbPlan.table = `${prefix}_orders`;
    await mariadbPool.query(`CREATE TABLE ${mariadbPlan.table} (id varchar(255) NOT NULL, attempt int NOT NULL)`);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    Object.assign(mariadbPlan, { steal: false, conflicts: 0, sleep: 0, sessionLimit: null });
  });

  afterAll(async () => {
    await mariadbStore?.close();
    if (mariadbPool) await dropTables(mariadbPool, prefix);
    await mariadbPool?.end();
  });

  const rows = async (order: string) =>
    (
      await mariadbPool!.query<mysql.RowDataPacket[]>(`SELECT attempt FROM ${mariadbPlan.table} WHERE id = ?`, [order])
    )[0].map((row) => ({ attempt: Number(row.attempt) }));
  const start = async (order: string, input: Record<string, unknown> = {}) => {
    app ??= await createTestApp([MariaDbOrderWorkflow], { store: mariadbStore as never });
    return app.client.start(MariaDbOrderWorkflow, { order, ...input }, { id: order });
  };

  it('runs a transaction that hit a deadlock again at once, in the same attempt', async () => {
    mariadbPlan.conflicts = 1;
    await start('m-deadlock');
    await app!.worker.drain();
    expect(await rows('m-deadlock')).toEqual([{ attempt: 1 }]);
    expect(
      (await mariadbStore!.get('m-deadlock', { journal: true }))!.journal!.find((e) => e.name === 'save-order'),
    ).toMatchObject({ state: 'completed', attempts: 1 });
  });

  it('commits the rows with the result, and rolls back a failed attempt', async () => {
    const handle = await start('m-commit', { failFirst: true });
    await app!.worker.drain();
    expect(await rows('m-commit')).toEqual([]);
    app!.clock.advance('2s');
    await app!.worker.drain();
    expect(await rows('m-commit')).toEqual([{ attempt: 2 }]);
    app!.clock.advance('2m');
    await app!.worker.drain();
    expect(await handle.result()).toEqual({ order: 'm-commit', attempt: 2 });
    expect(await rows('m-commit')).toEqual([{ attempt: 2 }]);
  });

  it('bounds the statements of an attempt with a timeout in the server (max_statement_time), and resets the session after', async () => {
    // One connection, so the step's and the checks' statements share its session.
    const onePool = createMysqlPool({ connectionLimit: 1 });
    const oneStore = new MySqlWorkflowStore({ executor: fromMysql2(onePool), schema: mariadbStore!.schema });
    const own = await createTestApp([MariaDbOrderWorkflow], { store: oneStore as never });
    try {
      mariadbPlan.sleep = 30;
      const handle = await own.client.start(
        MariaDbOrderWorkflow,
        { order: 'm-timeout', timeout: '300ms' },
        { id: 'm-timeout' },
      );
      const began = Date.now();
      await own.worker.drain();
      // Without the server's limit the rollback would wait for SLEEP(30) to end.
      expect(Date.now() - began).toBeLessThan(10_000);
      expect(Number(mariadbPlan.sessionLimit)).toBe(1.3);
      own.clock.advance('2s');
      await own.worker.drain();
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowTimeoutError);
      expect(await rows('m-timeout')).toEqual([]);
      const [[after]] = await onePool.query<mysql.RowDataPacket[]>(
        'SELECT @@SESSION.max_statement_time = @@GLOBAL.max_statement_time AS reset',
      );
      expect(Number(after!.reset)).toBe(1);
      // Without a timeout the session keeps the server's default.
      mariadbPlan.sleep = 0;
      await own.client.start(MariaDbOrderWorkflow, { order: 'm-no-timeout' }, { id: 'm-no-timeout' });
      await own.worker.drain();
      const [[global]] = await onePool.query<mysql.RowDataPacket[]>('SELECT @@GLOBAL.max_statement_time AS seconds');
      expect(mariadbPlan.sessionLimit).toBe(String(global!.seconds));
      expect(await rows('m-no-timeout')).toEqual([{ attempt: 1 }]);
    } finally {
      await own.close();
      await onePool.end();
    }
  });

  it("gives the session back with the statement limit it had, not the server's default", async () => {
    // One connection, whose session the application set up with a limit of its own.
    const onePool = createMysqlPool({ connectionLimit: 1 });
    await onePool.query('SET SESSION max_statement_time = 7');
    const oneStore = new MySqlWorkflowStore({ executor: fromMysql2(onePool), schema: mariadbStore!.schema });
    const own = await createTestApp([MariaDbOrderWorkflow], { store: oneStore as never });
    try {
      await own.client.start(
        MariaDbOrderWorkflow,
        { order: 'm-session-limit', timeout: '5s' },
        { id: 'm-session-limit' },
      );
      await own.worker.drain();
      expect(Number(mariadbPlan.sessionLimit)).toBe(6);
      expect(await rows('m-session-limit')).toEqual([{ attempt: 1 }]);
      const [[after]] = await onePool.query<mysql.RowDataPacket[]>('SELECT @@SESSION.max_statement_time AS seconds');
      expect(Number(after!.seconds)).toBe(7);
    } finally {
      await own.close();
      await onePool.end();
    }
  });

  it('refuses a statement the callback sends after its timeout: nothing of it commits', async () => {
    app = await createTestApp([MariaDbLateWorkflow], { store: mariadbStore as never });
    const handle = await app.client.start(MariaDbLateWorkflow, { order: 'm-late' }, { id: 'm-late' });
    await app.worker.drain();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowTimeoutError);
    const outcome = await late.get('m-late');
    expect(await rows('m-late')).toEqual([]);
    expect(outcome).toMatch(/belonged to a transaction that has ended/);
  });

  it('rolls back when the lease was lost during the callback', async () => {
    mariadbPlan.steal = true;
    await start('m-lease');
    await app!.worker.drain();
    expect(await rows('m-lease')).toEqual([]);
    const details = await mariadbStore!.get('m-lease', { journal: true });
    expect(details!.journal!.some((e) => e.name === 'save-order')).toBe(false);
    expect(details!.leaseToken).toBe('someone-else');
  });
});
