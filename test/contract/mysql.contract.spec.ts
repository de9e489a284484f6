import * as vitest from 'vitest';
import { afterAll, beforeAll } from 'vitest';
import type mysql from 'mysql2/promise';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { workflowStoreContract } from '../../src/testing/workflow-store-contract.js';
import {
  commonGroundOnly,
  createMysqlPool,
  dropTables,
  freshPrefix,
  MYSQL_REQUIREMENT,
  requireMysql,
} from '../support/mysql.js';
import { mysqlDump } from '../support/sql-target.js';

// One fresh table prefix for this file, migrated once and dropped at the end; each test gets a new
// store on it (the suite gives every test its own ids and names, so they share the tables safely).
const available = await requireMysql('mysql store contract');
const schema = freshPrefix('contract');
let pool: mysql.Pool | undefined;

if (available) {
  beforeAll(async () => {
    pool = createMysqlPool({ connectionLimit: 12 });
    await new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }).init();
  });
  afterAll(async () => {
    if (!pool) return;
    await dropTables(pool, schema);
    await pool.end();
  });
}

// Twice: as the store runs on this MariaDB (its batches one round trip each), and as it runs on
// MySQL 8.0, keeping to what both servers have (see MySqlServerFeatures).
for (const [name, executor] of [
  ['mysql', () => fromMysql2(pool!)],
  ['mysql (common ground of MySQL 8.0 and MariaDB)', () => commonGroundOnly(fromMysql2(pool!))],
] as const) {
  workflowStoreContract(
    name,
    async () => {
      const store = new MySqlWorkflowStore({ executor: executor(), schema });
      await store.init();
      return { store, close: () => store.close() };
    },
    {
      skip: available ? false : `needs ${MYSQL_REQUIREMENT}`,
      test: vitest,
      // The application's own transactions: a connection of the pool at READ COMMITTED, begun.
      appTransaction: async () => {
        const connection = await pool!.getConnection();
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.beginTransaction();
        return {
          handle: connection,
          commit: async () => void (await connection.commit(), connection.release()),
          rollback: async () => void (await connection.rollback(), connection.release()),
        };
      },
      // A table prefix of its own, migrated, for each scenario that needs the whole store.
      emptyStore: async () => {
        const empty = freshPrefix('contractempty');
        const store = new MySqlWorkflowStore({ executor: executor(), schema: empty });
        await store.init();
        return {
          store,
          dump: () => mysqlDump(pool!, empty),
          async close() {
            await store.close();
            await dropTables(pool!, empty);
          },
        };
      },
    },
  );
}
