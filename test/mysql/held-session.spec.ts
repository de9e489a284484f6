import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type mysql from 'mysql2/promise';
import { fromMysql2 } from '../../src/mysql/index.js';
import { sessionIsolation } from '../../src/mysql/from-mysql2.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { createMysqlPool, requireMysql } from '../support/mysql.js';

const available = await requireMysql('fromMysql2 held connection');

/** What a held transaction sees of its session: its connection, autocommit, isolation level. */
async function session(executor: SqlExecutor, held = true) {
  return executor.transaction(
    async (tx) => {
      const { rows } = await tx.query('SELECT CONNECTION_ID() AS id, @@autocommit AS autocommit');
      return {
        id: Number(rows[0]!.id),
        autocommit: Number(rows[0]!.autocommit),
        isolation: await sessionIsolation(tx),
      };
    },
    { held },
  );
}

/** The held connection, once the background setup after the first held transaction is done. */
async function heldSession(executor: SqlExecutor) {
  for (let tries = 0; tries < 200; tries++) {
    const seen = await session(executor);
    if (seen.autocommit === 0) return seen;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('no held connection after 200 transactions');
}

async function alive(pool: mysql.Pool, id: number): Promise<boolean> {
  const [rows] = await pool.query('SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?', [id]);
  return (rows as unknown[]).length > 0;
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.skipIf(!available)('fromMysql2: the connection held between the store transactions', () => {
  let pool: mysql.Pool;
  beforeAll(() => {
    pool = createMysqlPool({ connectionLimit: 4 });
  });
  afterAll(async () => {
    await pool.end();
  });

  it('runs held transactions on one READ COMMITTED, autocommit-off connection, and the others as before', async () => {
    const executor = fromMysql2(pool);
    onTestFinished(() => executor.close?.());
    const held = await heldSession(executor);
    expect(held.isolation).toBe('READ-COMMITTED');
    expect((await session(executor)).id).toBe(held.id);
    // A transaction that isn't the store's own never gets it, nor its session (only the
    // transaction is READ COMMITTED, which the session's level doesn't show).
    const other = await session(executor, false);
    expect(other).toMatchObject({ autocommit: 1, isolation: await sessionIsolation(fromMysql2(pool)) });
    expect(other.id).not.toBe(held.id);
    // Nor does a plain statement of the application on the pool.
    const [rows] = await pool.query('SELECT @@autocommit AS autocommit');
    expect(Number((rows as Array<{ autocommit: number }>)[0]!.autocommit)).toBe(1);
    // Rolled back with the transaction: a held transaction that throws leaves nothing behind.
    await pool.query('CREATE TABLE IF NOT EXISTS held_session_probe (n INT) ENGINE = InnoDB');
    await expect(
      executor.transaction(
        async (tx) => {
          await tx.query('INSERT INTO held_session_probe VALUES (1)');
          throw new Error('rolled back');
        },
        { held: true },
      ),
    ).rejects.toThrow('rolled back');
    const [probe] = await pool.query('SELECT COUNT(*) AS n FROM held_session_probe');
    await pool.query('DROP TABLE held_session_probe');
    expect(Number((probe as Array<{ n: number }>)[0]!.n)).toBe(0);
    expect((await session(executor)).id).toBe(held.id);
    executor.close?.();
    await until(async () => !(await alive(pool, held.id)), 'the held connection to close');
  });

  it('replaces a held connection the server closed, and gives the pool its connections back on close()', async () => {
    const executor = fromMysql2(pool);
    onTestFinished(() => executor.close?.());
    const held = await heldSession(executor);
    await pool.query(`KILL CONNECTION ${held.id}`);
    await until(async () => !(await alive(pool, held.id)), 'the killed connection to go');
    // The next held transactions run on other connections, one of which becomes the held one.
    const next = await heldSession(executor);
    expect(next.id).not.toBe(held.id);
    executor.close?.();
    await until(async () => !(await alive(pool, next.id)), 'the held connection to close');
    // All four connections of the pool can be lent again at once.
    const connections = await Promise.all([
      pool.getConnection(),
      pool.getConnection(),
      pool.getConnection(),
      pool.getConnection(),
    ]);
    for (const connection of connections) connection.release();
  });
});

describe.skipIf(!available)('fromMysql2: a small pool', () => {
  it('holds no connection of a pool of fewer than 4: every transaction gives its connection back', async () => {
    const small = createMysqlPool({ connectionLimit: 1 });
    try {
      const executor = fromMysql2(small);
      for (let i = 0; i < 3; i++) expect((await session(executor)).autocommit).toBe(1);
      // The pool's one connection is free for the application at once.
      const [rows] = await small.query('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await small.end();
    }
  });
});
