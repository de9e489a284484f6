// A debounced start inside the application's transaction, on each SQL server: what it creates or
// changes (the instance and its debounce key) commits and rolls back with the application's rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_TIME as T, newInstance, testScope } from '../../src/testing/store-fixtures.js';
import type { NewWorkflowInstance, WorkflowStore } from '../../src/storage/workflow-store.js';
import { requireMysql, useMysqlStore } from '../support/mysql.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

const [postgres, mysql] = [
  await requirePostgres('debounced start in a transaction'),
  await requireMysql('debounced start in a transaction'),
];

const debounced = (workflow: string, id: string, now: number): NewWorkflowInstance =>
  newInstance(id, workflow, { input: { from: id }, now, wakeAt: now + 5_000, debounce: { key: 'k', maxWait: null } });

/** The application's transaction on one connection: begin, commit, rollback, and the handle the store takes. */
interface AppTransaction {
  handle: unknown;
  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  release(): void;
}

function scenarios(store: () => WorkflowStore, open: () => Promise<AppTransaction>) {
  it('joins a burst, and rolls back with the transaction (the key too)', async () => {
    const s = testScope();
    const tx = await open();
    try {
      await tx.begin();
      const first = await store().createInTransaction!(tx.handle, debounced(s.workflow, s.id('a'), T));
      expect(first.created).toBe(true);
      const joined = await store().createInTransaction!(tx.handle, debounced(s.workflow, s.id('b'), T + 1_000));
      expect(joined).toMatchObject({ created: false, instance: { id: s.id('a'), input: { from: s.id('b') } } });
      expect(await store().get(s.id('a'))).toBeNull();
      await tx.rollback();
      expect(await store().get(s.id('a'))).toBeNull();
      // The key was rolled back with it: the next start of the key begins a burst of its own.
      const after = await store().create(debounced(s.workflow, s.id('c'), T + 2_000));
      expect(after).toMatchObject({ created: true, instance: { id: s.id('c') } });

      await tx.begin();
      const inside = await store().createInTransaction!(tx.handle, debounced(s.workflow, s.id('d'), T + 3_000));
      expect(inside).toMatchObject({ created: false, instance: { id: s.id('c'), wakeAt: T + 8_000 } });
      await tx.commit();
      expect(await store().get(s.id('c'))).toMatchObject({ input: { from: s.id('d') }, wakeAt: T + 8_000 });
      expect(await store().get(s.id('d'))).toBeNull();
    } finally {
      tx.release();
    }
  });
}

describe.skipIf(!postgres)('a debounced start in the application transaction: PostgreSQL', () => {
  const fixture = usePostgresStore('debouncetx', { beforeAll, afterAll });
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

describe.skipIf(!mysql)('a debounced start in the application transaction: MySQL / MariaDB', () => {
  const fixture = useMysqlStore('debouncetx', { beforeAll, afterAll });
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
