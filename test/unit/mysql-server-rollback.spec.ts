// fromMysql2()'s transactions when the server rolls the whole transaction back under a statement
// whose error the code in it catches: against a stand-in for a mysql2 connection whose server
// answers a lock-wait timeout (1205) as InnoDB does with and without innodb_rollback_on_timeout
// (which can't be switched on a running server). The deadlock, on a real MariaDB, is in
// test/transactions/mysql-server-rollback.spec.ts.
import { describe, expect, it } from 'vitest';
import { isTransactionConflict } from '../../src/engine/transaction-operation.js';
import { fromMysql2, type Mysql2ConnectionLike, type Mysql2PoolLike } from '../../src/mysql/index.js';

type Callback = (error: Error | null, result?: unknown) => void;

/** A server of one connection: what its transaction holds, what it committed, what it was sent. */
function fakeServer({ rollbackOnTimeout }: { rollbackOnTimeout: boolean }) {
  const server = { inTransaction: false, pending: [] as string[], committed: [] as string[], sent: [] as string[] };
  const header = () => ({ affectedRows: 1, insertId: 0, serverStatus: server.inTransaction ? 3 : 2 });
  const run = (sql: string): unknown => {
    server.sent.push(sql);
    if (sql === 'START TRANSACTION') server.inTransaction = true;
    else if (sql === 'COMMIT' || sql === 'ROLLBACK') {
      if (sql === 'COMMIT') server.committed.push(...server.pending);
      Object.assign(server, { inTransaction: false, pending: [] });
    } else if (sql.startsWith('UPDATE locked')) {
      if (rollbackOnTimeout) Object.assign(server, { inTransaction: false, pending: [] });
      throw Object.assign(new Error('Lock wait timeout exceeded; try restarting transaction'), {
        errno: 1205,
        code: 'ER_LOCK_WAIT_TIMEOUT',
      });
    } else if (sql.startsWith('INSERT')) (server.inTransaction ? server.pending : server.committed).push(sql);
    return header();
  };
  const core = {
    query(sql: string, _values: unknown, callback: Callback) {
      queueMicrotask(() => {
        let result: unknown;
        try {
          result = run(sql);
        } catch (error) {
          return callback(error as Error);
        }
        callback(null, result);
      });
    },
  };
  const connection = {
    connection: core,
    query: async (sql: string) => [run(sql), undefined],
    release: () => undefined,
  };
  const pool = {
    pool: { config: { connectionLimit: 1, connectionConfig: {} } },
    query: () => Promise.reject(new Error('not used here')),
    getConnection: async () => connection,
  } as unknown as Mysql2PoolLike;
  return { server, pool };
}

/** A transaction whose code catches the lock-wait timeout and goes on; `store` stands for the store's write of the step's result. */
async function swallowingTimeout(pool: Mysql2PoolLike) {
  const outcome: { after?: string } = {};
  const result = await fromMysql2(pool)
    .transaction(async (tx) => {
      const connection = tx.handle as Mysql2ConnectionLike;
      await connection.query('INSERT before');
      await connection.query('UPDATE locked').catch(() => undefined);
      outcome.after = await connection.query('INSERT after').then(
        () => 'ran',
        (error: Error) => error.message,
      );
      await tx.query('INSERT store');
      return 'done';
    })
    .catch((error: unknown) => error as Error);
  return { ...outcome, result };
}

describe('fromMysql2(): a transaction the server rolled back under a statement', () => {
  it('refuses every later statement and the commit when the server rolled back on a lock-wait timeout (innodb_rollback_on_timeout)', async () => {
    const { server, pool } = fakeServer({ rollbackOnTimeout: true });
    const { after, result } = await swallowingTimeout(pool);
    expect(after).toMatch(
      /rolled this transaction back when one of its statements failed \(Lock wait timeout exceeded.*\).*refused.*let the error propagate/,
    );
    expect(result).toBeInstanceOf(Error);
    expect((result as Error).message).toMatch(/rolled this transaction back/);
    expect((result as Error).cause).toMatchObject({ errno: 1205 });
    // Not a conflict the engine runs again at once: a failed attempt, for the step's retry.
    expect(isTransactionConflict(result)).toBe(false);
    expect(server.committed).toEqual([]);
    // Asked once, after the failure; then only the ROLLBACK.
    expect(server.sent.slice(server.sent.indexOf('UPDATE locked'))).toEqual(['UPDATE locked', 'DO 0', 'ROLLBACK']);
  });

  it('goes on as before when the server rolled back the failed statement alone (its default)', async () => {
    const { server, pool } = fakeServer({ rollbackOnTimeout: false });
    const { after, result } = await swallowingTimeout(pool);
    expect([after, result]).toEqual(['ran', 'done']);
    expect(server.committed).toEqual(['INSERT before', 'INSERT after', 'INSERT store']);
  });
});
