import { afterEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { WorkflowError } from '../../src/errors/workflow.error.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createPool, freshSchemaName, requirePostgres } from '../support/postgres.js';

// The store's statements take a signal topic's lock and then read what committed before it was
// granted (migration 0003): under REPEATABLE READ or SERIALIZABLE a statement's snapshot predates
// the lock, so a signal that waited for a suspension's lock misses that suspension's wait, and the
// suspension that waited for a signal's lock misses that signal: the instance sleeps through it.
const available = await requirePostgres('PostgresWorkflowStore isolation check');

describe.runIf(available)('PostgresWorkflowStore: the isolation level of its pool', () => {
  let pool: pg.Pool | undefined;
  afterEach(async () => {
    await pool?.end();
    pool = undefined;
  });

  for (const level of ['repeatable read', 'serializable']) {
    it(`refuses to start on a pool whose statements run at ${level.toUpperCase()}, naming the level and the fix, and creates nothing`, async () => {
      pool = createPool({ max: 2, options: `-c default_transaction_isolation=${level.replace(' ', '\\ ')}` });
      const schema = freshSchemaName('iso');
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
      const failure = await store.init().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(WorkflowError);
      expect((failure as Error).message).toContain(`the pool's statements run at ${level.toUpperCase()}`);
      expect((failure as Error).message).toMatch(
        /needs READ COMMITTED.*default_transaction_isolation=read\\\\ committed/s,
      );
      const { rows } = await pool.query(
        'SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1',
        [schema],
      );
      expect(rows[0].n).toBe(0);
      await store.close();
    });
  }

  it('starts on a pool that sets READ COMMITTED explicitly', async () => {
    pool = createPool({ max: 2, options: '-c default_transaction_isolation=read\\ committed' });
    const schema = freshSchemaName('iso');
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    try {
      await store.init();
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
