// A real deadlock on MariaDB (or MySQL) between a transaction under test and another connection,
// in which InnoDB picks the transaction under test as the victim: it rolls that whole transaction
// back and leaves its session outside any transaction.
import type mysql from 'mysql2/promise';
import { lockWaits } from './mysql-lock-waits.js';

/** The application tables a deadlock needs: `locks` holds rows 1 and 2, `ballast` the other side's weight. */
export interface DeadlockTables {
  locks: string;
  ballast: string;
}

/** Creates the tables of `deadlock()` beside a test's own, named `<prefix>_locks_app` and `<prefix>_ballast`. */
export async function createDeadlockTables(pool: mysql.Pool, prefix: string): Promise<DeadlockTables> {
  const tables = { locks: `${prefix}_locks_app`, ballast: `${prefix}_ballast` };
  await pool.query(`CREATE TABLE ${tables.locks} (id int PRIMARY KEY, hits int NOT NULL) ENGINE=InnoDB`);
  await pool.query(`CREATE TABLE ${tables.ballast} (n int NOT NULL) ENGINE=InnoDB`);
  await pool.query(`INSERT INTO ${tables.locks} (id, hits) VALUES (1, 0), (2, 0)`);
  return tables;
}

/**
 * A real deadlock between the transaction whose statements `send` runs and another one on a
 * connection of `others`, in which InnoDB picks the former as the victim (the other one has written
 * more rows): it holds row 1, the other holds row 2 and waits for row 1, then it asks for row 2
 * (and `alongside` runs meanwhile: a statement queued behind that one, say). Resolves to what its
 * statement rejected with, or `null` when it did not.
 */
export async function deadlock(
  others: mysql.Pool,
  { locks, ballast }: DeadlockTables,
  send: (sql: string) => Promise<unknown>,
  alongside?: () => Promise<unknown>,
): Promise<unknown> {
  await send(`UPDATE ${locks} SET hits = hits + 1 WHERE id = 1`);
  const other = await others.getConnection();
  try {
    await other.query('START TRANSACTION');
    await other.query(`INSERT INTO ${ballast} (n) VALUES ${Array.from({ length: 20 }, (_, i) => `(${i})`).join(', ')}`);
    await other.query(`UPDATE ${locks} SET hits = hits + 1 WHERE id = 2`);
    const [[{ id }]] = await other.query<mysql.RowDataPacket[]>('SELECT CONNECTION_ID() AS id');
    const waiting = other.query(`UPDATE ${locks} SET hits = hits + 1 WHERE id = 1`);
    // Awaited below once the deadlock formed; when it does not, its failure is the error thrown here.
    waiting.catch(() => undefined);
    try {
      for (const deadline = Date.now() + 10_000; !(await waitsForLock(others, id));) {
        if (Date.now() > deadline) throw new Error('the other transaction never waited for row 1');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } catch (error) {
      // Its statement would otherwise wait for row 1 until innodb_lock_wait_timeout, and the ROLLBACK below behind it.
      await others.query(`KILL QUERY ${Number(id)}`).catch(() => undefined);
      throw error;
    }
    const [caught] = await Promise.all([
      send(`UPDATE ${locks} SET hits = hits + 1 WHERE id = 2`).then(
        () => null,
        (error: unknown) => error,
      ),
      alongside?.(),
    ]);
    await waiting;
    return caught;
  } finally {
    await other.query('ROLLBACK').catch(() => undefined);
    other.release();
  }
}

/** Whether the session `id` waits for a lock now, as InnoDB's own status tells it (see `lockWaits()`). */
async function waitsForLock(pool: mysql.Pool, id: number): Promise<boolean> {
  const session = new RegExp(`^(MySQL|MariaDB) thread id ${id},`, 'm');
  return (await lockWaits(pool)).some((transaction) => session.test(transaction));
}
