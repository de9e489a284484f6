// The PostgreSQL the tests run against, and what they need of it: a pool, a fresh schema per test
// file (or test), and a decision whether to run at all. Unreachable locally: the PostgreSQL tests
// skip, saying what they need. Unreachable on CI (CI=true): they fail.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { fromPg, PostgresWorkflowStore, type PgPoolClientLike, type PgPoolLike } from '../../src/postgres/index.js';
import type { PgQueryConfigLike } from '../../src/postgres/from-pg.js';

export const pgConnection = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  database: process.env.PGDATABASE ?? 'test',
  password: process.env.PGPASSWORD,
};

/** What the PostgreSQL tests need, as the skip message says it. */
export const PG_REQUIREMENT = `PostgreSQL at ${pgConnection.host}:${pgConnection.port} database ${pgConnection.database}`;

/** A pool on the test database. Close it (`await pool.end()`) when done. */
export function createPool(overrides: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ ...pgConnection, max: 10, ...overrides });
  // An idle connection the server drops is reported here; the next statement on it fails instead.
  pool.on('error', () => undefined);
  return pool;
}

let availability: Promise<string | null> | undefined;

/** `null` when the test database answers; otherwise why not. Asked once per test file. */
export function postgresUnavailable(): Promise<string | null> {
  availability ??= (async () => {
    const client = new pg.Client({ ...pgConnection, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return null;
    } catch (error) {
      return error instanceof Error ? error.message || String(error) : String(error);
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return availability;
}

/**
 * Whether the PostgreSQL tests of a file run: `true` when the database answers. Locally, when it
 * doesn't, `false` after saying what is missing. On CI (`CI=true`) it throws instead, so the file
 * fails rather than passing without testing anything.
 */
export async function requirePostgres(suite: string): Promise<boolean> {
  const reason = await postgresUnavailable();
  if (reason === null) return true;
  const message = `${suite}: needs ${PG_REQUIREMENT} (user ${pgConnection.user}; set PGHOST/PGPORT/PGUSER/PGDATABASE): ${reason}`;
  if (process.env.CI === 'true') throw new Error(`${message}. Failing: CI=true and PostgreSQL is unreachable.`);
  console.warn(`Skipping ${message}`);
  return false;
}

/** A schema name no other test run uses: `t_<random>` (valid for the store: lowercase, under 40 characters). */
export function freshSchemaName(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Drops `schema` and everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/**
 * A migrated store on a fresh schema for the tests of one `describe`: created in `beforeAll`,
 * closed and dropped (with its pool) in `afterAll`. Read `fixture.store` / `fixture.pool` in tests.
 */
export function usePostgresStore(
  prefix: string,
  hooks: { beforeAll: (fn: () => Promise<void>) => void; afterAll: (fn: () => Promise<void>) => void },
  poolSize = 4,
): { readonly pool: pg.Pool; readonly store: PostgresWorkflowStore; readonly schema: string } {
  const schema = freshSchemaName(prefix);
  let pool: pg.Pool | undefined;
  let store: PostgresWorkflowStore | undefined;
  hooks.beforeAll(async () => {
    pool = createPool({ max: poolSize });
    store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    await store.init();
  });
  hooks.afterAll(async () => {
    await store?.close();
    if (pool) await dropSchema(pool, schema);
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
 * A pool whose connect() hands out real clients, with every statement they are sent and every
 * notification they receive recorded (whatever the executor does with it).
 */
export function recordingPool(max = 3) {
  const pool = createPool({ max, application_name: `nwf-listen-${randomUUID().slice(0, 8)}` });
  const sent: string[] = [];
  const received: Array<{ channel: string; payload: string }> = [];
  const recording: PgPoolLike = {
    query: (text, values) => pool.query(text as string, values),
    async connect() {
      const client = await pool.connect();
      const query = client.query.bind(client) as PgPoolClientLike['query'];
      client.on('notification', (message) =>
        received.push({ channel: message.channel, payload: message.payload ?? '' }),
      );
      return Object.assign(client, {
        query: (text: string | PgQueryConfigLike, values?: unknown[]) => {
          sent.push(typeof text === 'string' ? text : text.text);
          return query(text, values);
        },
      }) as unknown as PgPoolClientLike;
    },
  };
  return { pool, recording, sent, received, held: () => pool.totalCount - pool.idleCount };
}
