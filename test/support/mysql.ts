// The MariaDB (or MySQL) the tests run against, and what they need of it: a pool, a fresh table
// prefix per test file, and a decision whether to run at all. Unreachable locally: the MySQL tests
// skip, saying what they need. Unreachable on CI (CI=true): they fail.
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { fromMysql2, MySqlWorkflowStore, type SqlExecutor } from '../../src/mysql/index.js';

export const mysqlConnection = {
  host: process.env.MYSQL_HOST ?? '127.0.0.1',
  port: Number(process.env.MYSQL_PORT ?? 3306),
  user: process.env.MYSQL_USER ?? 'root',
  password: process.env.MYSQL_PASSWORD ?? '',
  database: process.env.MYSQL_DATABASE ?? 'test',
};

/** What the MySQL tests need, as the skip message says it. */
export const MYSQL_REQUIREMENT = `MariaDB/MySQL at ${mysqlConnection.host}:${mysqlConnection.port} database ${mysqlConnection.database}`;

/** A pool on the test database. Close it (`await pool.end()`) when done. */
export function createMysqlPool(overrides: mysql.PoolOptions = {}): mysql.Pool {
  return mysql.createPool({ ...mysqlConnection, connectionLimit: 8, ...overrides });
}

let availability: Promise<string | null> | undefined;

/** `null` when the test database answers; otherwise why not. Asked once per test file. */
export function mysqlUnavailable(): Promise<string | null> {
  availability ??= (async () => {
    try {
      const connection = await mysql.createConnection({ ...mysqlConnection, connectTimeout: 3_000 });
      try {
        await connection.query('SELECT 1');
        return null;
      } finally {
        await connection.end().catch(() => undefined);
      }
    } catch (error) {
      return error instanceof Error ? error.message || String(error) : String(error);
    }
  })();
  return availability;
}

/**
 * Whether the MySQL tests of a file run: `true` when the database answers. Locally, when it
 * doesn't, `false` after saying what is missing. On CI (`CI=true`) it throws instead, so the file
 * fails rather than passing without testing anything.
 */
export async function requireMysql(suite: string): Promise<boolean> {
  const reason = await mysqlUnavailable();
  if (reason === null) return true;
  const message = `${suite}: needs ${MYSQL_REQUIREMENT} (user ${mysqlConnection.user}; set MYSQL_HOST/MYSQL_PORT/MYSQL_USER/MYSQL_PASSWORD/MYSQL_DATABASE): ${reason}`;
  if (process.env.CI === 'true') throw new Error(`${message}. Failing: CI=true and MariaDB is unreachable.`);
  console.warn(`Skipping ${message}`);
  return false;
}

/** A table prefix no other test run uses: `<prefix>_<random>`. */
export function freshPrefix(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Drops every table named `<schema>_...`. */
export async function dropTables(pool: mysql.Pool, schema: string): Promise<void> {
  const [rows] = await pool.query<mysql.RowDataPacket[]>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?',
    [`${schema.replaceAll('_', '\\_')}\\_%`],
  );
  if (rows.length === 0) return;
  const connection = await pool.getConnection();
  try {
    await connection.query('SET FOREIGN_KEY_CHECKS = 0');
    await connection.query(`DROP TABLE IF EXISTS ${rows.map((row) => `\`${String(row.name)}\``).join(', ')}`);
    await connection.query('SET FOREIGN_KEY_CHECKS = 1');
  } finally {
    connection.release();
  }
}

/**
 * A migrated store on a fresh prefix for the tests of one `describe`: created in `beforeAll`,
 * closed and dropped (with its pool) in `afterAll`. Read `fixture.store` / `fixture.pool` in tests.
 */
export function useMysqlStore(
  prefix: string,
  hooks: { beforeAll: (fn: () => Promise<void>) => void; afterAll: (fn: () => Promise<void>) => void },
  poolSize = 4,
): { readonly pool: mysql.Pool; readonly store: MySqlWorkflowStore; readonly schema: string } {
  const schema = freshPrefix(prefix);
  let pool: mysql.Pool | undefined;
  let store: MySqlWorkflowStore | undefined;
  hooks.beforeAll(async () => {
    pool = createMysqlPool({ connectionLimit: poolSize });
    store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
    await store.init();
  });
  hooks.afterAll(async () => {
    await store?.close();
    if (pool) await dropTables(pool, schema);
    await pool?.end();
  });
  return {
    schema,
    get pool() {
      return pool!;
    },
    get store() {
      return store!;
    },
  };
}

/**
 * `executor` as on a server without MariaDB's compound statements (MySQL 8.0): a
 * `BEGIN NOT ATOMIC ... END` fails as MySQL's parser fails it, so the store's `init()` keeps to the
 * common ground of the two servers (see `MySqlServerFeatures`), and its tests run that path here.
 */
export function commonGroundOnly(executor: SqlExecutor): SqlExecutor {
  const refuse = (sql: string) => {
    if (/^\s*BEGIN\s+NOT\s+ATOMIC\b/i.test(sql)) {
      throw Object.assign(
        new Error(
          "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'NOT ATOMIC'",
        ),
        {
          errno: 1064,
          code: 'ER_PARSE_ERROR',
        },
      );
    }
  };
  return {
    query: async (sql, params, options) => (refuse(sql), executor.query(sql, params, options)),
    transaction: (fn, options) =>
      executor.transaction(
        (tx) => fn({ ...tx, query: async (sql, params, options) => (refuse(sql), tx.query(sql, params, options)) }),
        options,
      ),
    close: () => executor.close?.(),
  };
}
