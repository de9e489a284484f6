import { describe } from 'vitest';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { createPool, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { schedulesScenario } from './schedules-scenario.js';

const available = await requirePostgres('schedules e2e');

describe.skipIf(!available)('an every-second schedule served by two processes on one PostgreSQL schema', () => {
  const schema = freshSchemaName('e2e_sched');
  schedulesScenario({
    kind: 'postgres',
    schema,
    async open() {
      const pool = createPool({ max: 2 });
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
      await store.init();
      return {
        store,
        async close() {
          await store.close();
          await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await pool.end();
        },
      };
    },
  });
});
