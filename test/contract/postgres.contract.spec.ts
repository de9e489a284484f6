import * as vitest from 'vitest';
import { afterAll, beforeAll } from 'vitest';
import type pg from 'pg';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { workflowStoreContract } from '../../src/testing/workflow-store-contract.js';
import { createPool, dropSchema, freshSchemaName, PG_REQUIREMENT, requirePostgres } from '../support/postgres.js';
import { postgresDump } from '../support/sql-target.js';

// One fresh schema for this file, migrated once and dropped at the end; each test gets a new store
// on it (the suite gives every test its own ids and names, so they share the schema safely).
const available = await requirePostgres('postgres store contract');
const schema = freshSchemaName('contract');
let pool: pg.Pool | undefined;

if (available) {
  beforeAll(async () => {
    pool = createPool({ max: 12 });
    await new PostgresWorkflowStore({ executor: fromPg(pool), schema }).init();
  });
  afterAll(async () => {
    if (!pool) return;
    await dropSchema(pool, schema);
    await pool.end();
  });
}

workflowStoreContract(
  'postgres',
  () => {
    const store = new PostgresWorkflowStore({ executor: fromPg(pool!), schema });
    return { store, close: () => store.close() };
  },
  {
    skip: available ? false : `needs ${PG_REQUIREMENT}`,
    test: vitest,
    // The application's own transactions: a client of the pool after BEGIN.
    appTransaction: async () => {
      const client = await pool!.connect();
      await client.query('BEGIN');
      return {
        handle: client,
        commit: async () => void (await client.query('COMMIT'), client.release()),
        rollback: async () => void (await client.query('ROLLBACK'), client.release()),
      };
    },
    // A schema of its own, migrated, for each scenario that needs the whole store.
    emptyStore: async () => {
      const empty = freshSchemaName('contractempty');
      const store = new PostgresWorkflowStore({ executor: fromPg(pool!), schema: empty });
      await store.init();
      return {
        store,
        dump: () => postgresDump(pool!, empty),
        async close() {
          await store.close();
          await dropSchema(pool!, empty);
        },
      };
    },
  },
);
