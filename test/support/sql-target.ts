// One SQL store for the tests that run the same scenario on PostgreSQL and on MariaDB: a pool, the
// store on a schema (PostgreSQL) or table prefix (MySQL), the test's own tables beside it, and
// statements written once with `?` placeholders.
import type mysql from 'mysql2/promise';
import type pg from 'pg';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from './mysql.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from './postgres.js';

export type SqlKind = 'postgres' | 'mysql';

/** How the scenario names the server, in test titles. */
export const SERVER: Record<SqlKind, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB' };

export interface SqlTarget {
  kind: SqlKind;
  schema: string;
  /** The store (not yet migrated: call `init()`). */
  store: PostgresWorkflowStore | MySqlWorkflowStore;
  /** `name` as a table of the test's own beside the store's, quoted. */
  table(name: string): string;
  /** Runs `sql`, written with `?` placeholders, and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Closes the store and the pool; with `drop`, first drops the store's and the test's tables. */
  close(options?: { drop?: boolean }): Promise<void>;
}

/** Whether the suite can run on `kind`'s test server (skips locally, fails on CI when it can't). */
export function requireServer(kind: SqlKind, suite: string): Promise<boolean> {
  return kind === 'postgres' ? requirePostgres(suite) : requireMysql(`${suite} (MariaDB)`);
}

/** A schema or table prefix no other test run uses. */
export function freshSchema(kind: SqlKind, prefix: string): string {
  return kind === 'postgres' ? freshSchemaName(prefix) : freshPrefix(prefix);
}

/** The store on `schema` of `kind`'s test server, with a pool of `poolSize` connections. */
export function openSqlTarget(kind: SqlKind, schema: string, poolSize = 4): SqlTarget {
  if (kind === 'postgres') {
    const pool: pg.Pool = createPool({ max: poolSize });
    const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    return {
      kind,
      schema,
      store,
      table: (name) => `"${schema}"."${name}"`,
      async query<R>(sql: string, params: unknown[] = []) {
        let n = 0;
        return (await pool.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as R[];
      },
      async close({ drop = false } = {}) {
        await store.close();
        if (drop) await dropSchema(pool, schema);
        await pool.end();
      },
    };
  }
  const pool: mysql.Pool = createMysqlPool({ connectionLimit: poolSize });
  const store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
  return {
    kind,
    schema,
    store,
    table: (name) => `\`${schema}_${name}\``,
    async query<R>(sql: string, params: unknown[] = []) {
      const [rows] = await pool.query(sql, params);
      return rows as R[];
    },
    async close({ drop = false } = {}) {
      await store.close();
      if (drop) await dropTables(pool, schema);
      await pool.end();
    },
  };
}
