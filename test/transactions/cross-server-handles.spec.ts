// A driver client of the other server kind passed as `{ transaction }` (a mysql2 connection to
// the PostgreSQL store, a pg client to the MySQL store): refused with a TypeError that says so,
// nothing of the call stored, and the application's transaction still usable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newInstance, newSignal, testScope } from '../../src/testing/store-fixtures.js';
import { createMysqlPool, requireMysql, useMysqlStore } from '../support/mysql.js';
import { createPool, requirePostgres, usePostgresStore } from '../support/postgres.js';

const both = (await requirePostgres('cross-server handles')) && (await requireMysql('cross-server handles'));

describe.skipIf(!both)('a driver client of the other server kind as `transaction`', () => {
  const postgres = usePostgresStore('cross_kind', { beforeAll, afterAll }, 2);
  const mariadb = useMysqlStore('cross_kind', { beforeAll, afterAll }, 2);

  it('PostgresWorkflowStore refuses a mysql2 connection, saying so; that transaction stays usable', async () => {
    const pool = createMysqlPool({ connectionLimit: 1 });
    const connection = await pool.getConnection();
    try {
      await connection.beginTransaction();
      const s = testScope();
      const started = await postgres.store
        .createInTransaction(connection, newInstance(s.id('x'), s.workflow))
        .catch((e: unknown) => e as Error);
      const signalled = await postgres.store
        .signalInTransaction(connection, newSignal(s.signal('x')))
        .catch((e: unknown) => e as Error);
      for (const error of [started, signalled]) {
        expect(error).toBeInstanceOf(TypeError);
        expect((error as Error).message).toMatch(
          /PostgresWorkflowStore: `transaction` is a mysql2 connection, not on PostgreSQL/,
        );
      }
      await expect(connection.query('SELECT 1')).resolves.toBeDefined();
      expect(await postgres.store.get(s.id('x'))).toBeNull();
    } finally {
      await connection.rollback().catch(() => undefined);
      connection.release();
      await pool.end();
    }
  });

  it('MySqlWorkflowStore refuses a pg client, saying so; that transaction stays usable', async () => {
    const pool = createPool({ max: 1 });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const s = testScope();
      const started = await mariadb.store
        .createInTransaction(client, newInstance(s.id('x'), s.workflow))
        .catch((e: unknown) => e as Error);
      const signalled = await mariadb.store
        .signalInTransaction(client, newSignal(s.signal('x')))
        .catch((e: unknown) => e as Error);
      for (const error of [started, signalled]) {
        expect(error).toBeInstanceOf(TypeError);
        expect((error as Error).message).toMatch(
          /MySqlWorkflowStore: `transaction` is a pg client, not on MySQL or MariaDB/,
        );
      }
      // PostgreSQL refuses every statement of a transaction after a failed one: none was sent.
      await expect(client.query('SELECT 1')).resolves.toBeDefined();
      expect(await mariadb.store.get(s.id('x'))).toBeNull();
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      await pool.end();
    }
  });
});
