// One SQL store for the tests that run the same scenario on PostgreSQL and on MariaDB: a pool, the
// store on a schema (PostgreSQL) or table prefix (MySQL), the test's own tables beside it, and
// statements written once with `?` placeholders.
import type mysql from 'mysql2/promise';
import type pg from 'pg';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { createMysqlPool, dropTables, freshPrefix, mysqlConnection, requireMysql } from './mysql.js';
import { createPool, dropSchema, freshSchemaName, pgConnection, requirePostgres } from './postgres.js';

export type SqlKind = 'postgres' | 'mysql';

/** The SQL stores a test under test/sql/ runs on, each on its test server. */
export const SQL_KINDS: readonly SqlKind[] = ['postgres', 'mysql'];

/** How the scenario names the server, in test titles. */
export const SERVER: Record<SqlKind, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB' };

export interface SqlTarget {
  kind: SqlKind;
  schema: string;
  /** The store (not yet migrated: call `init()`). */
  store: PostgresWorkflowStore | MySqlWorkflowStore;
  /** Another store on the same pool and schema, with the store's `transactions` option (not initialised). */
  storeWith(options: { transactions?: Pick<SqlExecutor, 'transaction'> }): PostgresWorkflowStore | MySqlWorkflowStore;
  /** `name` as a table of the test's own beside the store's, quoted. */
  table(name: string): string;
  /** Runs `sql`, written with `?` placeholders, and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Every row of every table of the store (and the test's), as the server returns them, as text. */
  dump(): Promise<string>;
  /** A URL for the CLI's `--postgres` / `--mysql`. */
  url: string;
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
      storeWith: ({ transactions }) => new PostgresWorkflowStore({ executor: fromPg(pool), schema, transactions }),
      table: (name) => `"${schema}"."${name}"`,
      async query<R>(sql: string, params: unknown[] = []) {
        let n = 0;
        return (
          await pool.query(
            sql.replace(/\?/g, () => `$${++n}`),
            params,
          )
        ).rows as R[];
      },
      dump: () => postgresDump(pool, schema),
      url: `postgres://${pgConnection.user}@${pgConnection.host}:${pgConnection.port}/${pgConnection.database}`,
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
    storeWith: ({ transactions }) => new MySqlWorkflowStore({ executor: fromMysql2(pool), schema, transactions }),
    table: (name) => `\`${schema}_${name}\``,
    async query<R>(sql: string, params: unknown[] = []) {
      const [rows] = await pool.query(sql, params);
      return rows as R[];
    },
    dump: () => mysqlDump(pool, schema),
    url: `mysql://${mysqlConnection.user}${mysqlConnection.password ? `:${mysqlConnection.password}` : ''}@${mysqlConnection.host}:${mysqlConnection.port}/${mysqlConnection.database}`,
    async close({ drop = false } = {}) {
      await store.close();
      if (drop) await dropTables(pool, schema);
      await pool.end();
    },
  };
}

/** Every row of every table in PostgreSQL schema `schema`, as text. */
export async function postgresDump(pool: pg.Pool, schema: string): Promise<string> {
  const tables = await pool.query(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
    [schema],
  );
  let out = '';
  for (const { table_name } of tables.rows as Array<{ table_name: string }>) {
    const rows = await pool.query(`SELECT row_to_json(t)::text AS row FROM "${schema}"."${table_name}" t`);
    out += `${table_name}:\n${rows.rows.map((r: { row: string }) => r.row).join('\n')}\n`;
  }
  return out;
}

/** Every row of every table with MySQL table prefix `schema`, as text. */
export async function mysqlDump(pool: mysql.Pool, schema: string): Promise<string> {
  const [tables] = await pool.query<mysql.RowDataPacket[]>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ? ORDER BY table_name',
    [`${schema.replaceAll('_', '\\_')}\\_%`],
  );
  let out = '';
  for (const { name } of tables) {
    const [rows] = await pool.query<mysql.RowDataPacket[]>(`SELECT * FROM \`${String(name)}\``);
    // Bytes (the binary columns) as UTF-8 text, so a plaintext value in them shows.
    out += `${String(name)}:\n${JSON.stringify(rows, (_key, value: unknown) => (isBufferJson(value) ? Buffer.from(value.data).toString('utf8') : value))}\n`;
  }
  return out;
}

function isBufferJson(value: unknown): value is { type: 'Buffer'; data: number[] } {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((value as { data?: unknown }).data)
  );
}

/**
 * The store of `kind` on a fresh schema for the tests of one `describe`: opened and migrated in
 * `beforeAll`, closed and dropped (with its pool) in `afterAll`. Read `fixture.target` in tests.
 */
export function useSqlTarget(
  kind: SqlKind,
  prefix: string,
  hooks: { beforeAll: (fn: () => Promise<void>) => void; afterAll: (fn: () => Promise<void>) => void },
  poolSize = 4,
): { readonly target: SqlTarget } {
  let target: SqlTarget | undefined;
  hooks.beforeAll(async () => {
    target = openSqlTarget(kind, freshSchema(kind, prefix), poolSize);
    await target.store.init();
  });
  hooks.afterAll(async () => {
    await target?.close({ drop: true });
  });
  return {
    get target() {
      return target!;
    },
  };
}

/**
 * `open()` and `close()` for a scenario that opens a store per test: each `open()` migrates a store
 * of `kind` on a fresh schema; `close(store)` closes that store and its pool and drops its tables.
 */
export function freshStores(
  kind: SqlKind,
  prefix: string,
): { open(): Promise<WorkflowStore>; close(store: WorkflowStore): Promise<void> } {
  const open = new Map<WorkflowStore, SqlTarget>();
  return {
    async open() {
      const target = openSqlTarget(kind, freshSchema(kind, prefix));
      await target.store.init();
      open.set(target.store, target);
      return target.store;
    },
    async close(store) {
      await open.get(store)?.close({ drop: true });
      open.delete(store);
    },
  };
}
