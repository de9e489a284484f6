import { describe } from 'vitest';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';
import { schedulesScenario } from './schedules-scenario.js';

const available = await requireMysql('schedules e2e (MariaDB)');

describe.skipIf(!available)('an every-second schedule served by two processes on one MariaDB table prefix', () => {
  const schema = freshPrefix('e2e_sched');
  schedulesScenario({
    kind: 'mysql',
    schema,
    async open() {
      const pool = createMysqlPool({ connectionLimit: 2 });
      const store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
      await store.init();
      return {
        store,
        async close() {
          await store.close();
          await dropTables(pool, schema);
          await pool.end();
        },
      };
    },
  });
});
