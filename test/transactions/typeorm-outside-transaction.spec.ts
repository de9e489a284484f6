// TypeORM handles that are not in a transaction (a DataSource's default manager, the DataSource
// itself), passed as `{ transaction }`: refused, saying what to pass, and nothing of the call stays.
// (They have query() and transaction(), so they must not pass for a SqlExecutor.)
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { newInstance, newSignal, testScope } from '../../src/testing/store-fixtures.js';
import { mysqlConnection, requireMysql, useMysqlStore } from '../support/mysql.js';
import { pgConnection, requirePostgres, usePostgresStore } from '../support/postgres.js';

const REFUSAL = /TypeORM DataSource, EntityManager or QueryRunner that is not in a transaction/;

const servers = [
  {
    name: 'PostgreSQL',
    available: await requirePostgres('TypeORM handles outside a transaction on PostgreSQL'),
    useStore: usePostgresStore,
    connection: pgConnection,
    type: 'postgres' as const,
  },
  {
    name: 'MariaDB',
    available: await requireMysql('TypeORM handles outside a transaction on MariaDB'),
    useStore: useMysqlStore,
    connection: mysqlConnection,
    type: 'mariadb' as const,
  },
];

for (const server of servers) {
  describe.skipIf(!server.available)(`TypeORM handles outside a transaction, on ${server.name}`, () => {
    const fixture = server.useStore('typeorm_out', { beforeAll, afterAll }, 2);
    let source: DataSource;
    beforeAll(async () => {
      const { host, port, user: username, password, database } = server.connection;
      source = await new DataSource({
        type: server.type,
        host,
        port,
        username,
        password,
        database,
        poolSize: 1,
      }).initialize();
    });
    afterAll(async () => {
      await source?.destroy();
    });

    it("refuses the DataSource's default manager and the DataSource, saying what to pass", async () => {
      const s = testScope();
      for (const handle of [source.manager, source]) {
        await expect(fixture.store.createInTransaction(handle, newInstance(s.id('x'), s.workflow))).rejects.toThrow(
          REFUSAL,
        );
        await expect(fixture.store.signalInTransaction(handle, newSignal(s.signal('x')))).rejects.toThrow(REFUSAL);
      }
      expect(await fixture.store.get(s.id('x'))).toBeNull();
      expect(
        await fixture.store.signals({ name: s.signal('x'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
      ).toEqual([]);
    });
  });
}
