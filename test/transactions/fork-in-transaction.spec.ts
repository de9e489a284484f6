// A fork inside the application's transaction, on each SQL server: the fork, its origin and its
// journal commit and roll back with the application's rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalEntry, newInstance, testScope } from '../../src/testing/store-fixtures.js';
import type { WorkflowFork, WorkflowStore } from '../../src/storage/workflow-store.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

const [postgres, mysql] = [await requirePostgres('fork in a transaction'), await requireMysql('fork in a transaction')];

/** The application's transaction on one connection: begin, commit, rollback, and the handle the store takes. */
interface AppTransaction {
  handle: unknown;
  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  release(): void;
}

const fork = (workflow: string, id: string, source: string): WorkflowFork => ({
  instance: newInstance(id, workflow),
  from: { id: source, step: 'b' },
  entries: [journalEntry('a')],
});

function scenarios(store: () => WorkflowStore, open: () => Promise<AppTransaction>) {
  it('rolls back with the transaction, and commits with it: instance, origin and journal', async () => {
    const s = testScope();
    const tx = await open();
    try {
      await tx.begin();
      const made = await store().forkInTransaction!(tx.handle, fork(s.workflow, s.id('f'), s.id('src')));
      expect(made).toMatchObject({ created: true, instance: { forkedFrom: { id: s.id('src'), step: 'b' } } });
      expect(await store().get(s.id('f'))).toBeNull();
      await tx.rollback();
      expect(await store().get(s.id('f'))).toBeNull();

      await tx.begin();
      await store().forkInTransaction!(tx.handle, fork(s.workflow, s.id('f'), s.id('src')));
      await tx.commit();
      expect(await store().get(s.id('f'), { journal: true })).toMatchObject({
        status: 'pending',
        forkedFrom: { id: s.id('src'), step: 'b' },
        journal: [{ name: 'a' }],
      });
    } finally {
      tx.release();
    }
  });
}

describe.skipIf(!postgres)('a fork in the application transaction: PostgreSQL', () => {
  const fixture = usePostgresStore('forktx', { beforeAll, afterAll });
  scenarios(
    () => fixture.store,
    async () => {
      const client = await fixture.pool.connect();
      return {
        handle: client,
        begin: async () => void (await client.query('BEGIN')),
        commit: async () => void (await client.query('COMMIT')),
        rollback: async () => void (await client.query('ROLLBACK')),
        release: () => client.release(),
      };
    },
  );
});

describe.skipIf(!mysql)('a fork in the application transaction: MySQL / MariaDB', () => {
  const fixture = useMysqlStore('forktx', { beforeAll, afterAll });
  scenarios(
    () => fixture.store,
    async () => {
      const connection = await fixture.pool.getConnection();
      await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      return {
        handle: connection,
        begin: () => connection.beginTransaction(),
        commit: () => connection.commit(),
        rollback: () => connection.rollback(),
        release: () => connection.release(),
      };
    },
  );
});
