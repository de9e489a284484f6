// Each library's handle as the transaction-handle scenario drives it (orm-handles.spec.ts), on
// each SQL server: how the library connects to that server, and what the scenario does with it (a
// transaction, an insert into the application's own table, a statement of its own, the store's
// `transactions` option).
// What differs per server (drivers, dialects, placeholders, MySQL's READ COMMITTED sessions) is
// here; the library's part is written once.
import { MikroORM as PgMikroORM, EntityManager as PgMikroEntityManager } from '@mikro-orm/postgresql';
import { MikroORM as MariaMikroORM, EntityManager as MariaMikroEntityManager } from '@mikro-orm/mariadb';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle as pgDrizzle } from 'drizzle-orm/node-postgres';
import { drizzle as mysqlDrizzle } from 'drizzle-orm/mysql2';
import { sql as drizzleSql } from 'drizzle-orm';
import { Kysely, MysqlDialect, PostgresDialect, Transaction as KyselyTransaction, sql as kyselySql } from 'kysely';
import mysqlCallbacks from 'mysql2';
import type mysql from 'mysql2/promise';
import { execFileSync } from 'node:child_process';
import type pg from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import * as mysqlEntry from '../../src/mysql/index.js';
import * as postgresEntry from '../../src/postgres/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { createMysqlPool, mysqlConnection } from '../support/mysql.js';
import { createPool, pgConnection } from '../support/postgres.js';
import type { SqlKind } from '../support/sql-target.js';

/** One library connected to one database, as the tests drive it. */
export interface Kit {
  /** Runs `fn` in one of the library's transactions; resolves after the commit. */
  begin<T>(fn: (handle: object) => Promise<T>): Promise<T>;
  /** Inserts an application row into `orders` with the library, in the transaction `handle`. */
  insert(handle: object, id: string): Promise<void>;
  /** Runs `sql` (a statement without parameters) with the library, in the transaction `handle`. */
  execute(handle: object, sql: string): Promise<void>;
  /** The store's `transactions` option for this library (`undefined` for the driver: the store's own, the default). */
  transactions(): Pick<SqlExecutor, 'transaction'> | undefined;
  /** Whether `tx` is the library's own transaction handle. */
  isOwnHandle(tx: unknown): boolean;
  close(): Promise<void>;
}

/** A library, on one server. */
export interface KitMaker {
  name: string;
  /** How the store's messages name the library's handle. */
  library: string;
  /** The server's own driver (pg, mysql2), the store's default for `ctx.transaction()`. */
  driver: boolean;
  /** The library connected to `database` (the store's, by default), writing to the application's table `orders` there. */
  open(orders: string, database?: string): Promise<Kit>;
}

const READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

/** The libraries, the driver first, on `kind`'s test server. */
export function kitMakers(kind: SqlKind): KitMaker[] {
  const server = kind === 'postgres' ? postgres : mariadb;
  const on = (database: string | undefined) => database ?? server.connection.database;
  return [
    { ...server.driver, driver: true },
    {
      name: 'Kysely',
      library: 'Kysely',
      driver: false,
      open: async (orders, database) => kyselyKit(server.kysely(on(database)), orders, server.entry.kyselyTransactions),
    },
    {
      name: 'Drizzle',
      library: 'Drizzle',
      driver: false,
      async open(orders, database) {
        const { db, close } = await server.drizzle(on(database));
        return drizzleKit(db, orders, server.entry.drizzleTransactions, close);
      },
    },
    {
      name: 'TypeORM',
      library: 'TypeORM',
      driver: false,
      open: async (orders, database) =>
        typeormKit(await server.typeorm(on(database)), orders, server.placeholder, server.entry.typeormTransactions),
    },
    {
      name: 'MikroORM',
      library: 'MikroORM',
      driver: false,
      open: async (orders, database) =>
        mikroOrmKit(
          await server.mikroOrm(on(database)),
          server.mikroEntityManager,
          orders,
          server.entry.mikroOrmTransactions,
        ),
    },
    {
      name: 'Prisma',
      library: 'Prisma',
      driver: false,
      open: async (orders, database) =>
        prismaKit(await server.prisma(on(database)), orders, server.placeholder, server.entry.prismaTransactions),
    },
  ];
}

/** How each library connects to one server. */
interface Connectors {
  connection: { host: string; port: number; user: string; password?: string; database: string };
  /** The store's entry, with its `transactions` option functions. */
  entry: typeof postgresEntry | typeof mysqlEntry;
  /** The driver's placeholder for a statement's one parameter. */
  placeholder: string;
  /** The server's driver, as the application uses it for a transaction. */
  driver: Omit<KitMaker, 'driver'>;
  kysely(database: string): Kysely<unknown>;
  drizzle(database: string): Promise<{ db: DrizzleDb; close(): Promise<void> }>;
  typeorm(database: string): Promise<DataSource>;
  mikroOrm(database: string): Promise<MikroOrmLike>;
  mikroEntityManager: abstract new (...args: never[]) => object;
  prisma(database: string): Promise<PrismaLikeClient>;
}

/** MikroORM's options for `database` of `connection`, with no entities (the tests write raw statements). */
function mikroOrmOptions(connection: Connectors['connection'], database: string, pool: { min: number; max: number }) {
  const { host, port, user, password } = connection;
  return {
    dbName: database,
    host,
    port,
    user,
    password,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    pool,
    allowGlobalContext: true,
  };
}

/** Runs `fn` between BEGIN and COMMIT (ROLLBACK when it throws) on a connection of `connect()`. */
async function driverTransaction<C extends { release(): void }, T>(
  connect: () => Promise<C>,
  run: (connection: C, statement: 'BEGIN' | 'COMMIT' | 'ROLLBACK') => Promise<unknown>,
  fn: (handle: object) => Promise<T>,
): Promise<T> {
  const connection = await connect();
  try {
    await run(connection, 'BEGIN');
    const result = await fn(connection);
    await run(connection, 'COMMIT');
    return result;
  } catch (error) {
    await run(connection, 'ROLLBACK');
    throw error;
  } finally {
    connection.release();
  }
}

const isDriverConnection = (tx: unknown) =>
  typeof (tx as { query?: unknown }).query === 'function' &&
  typeof (tx as { release?: unknown }).release === 'function';

function kyselyKit(db: Kysely<unknown>, orders: string, transactions: typeof postgresEntry.kyselyTransactions): Kit {
  return {
    begin: (fn) => db.transaction().execute((trx) => fn(trx)),
    insert: async (handle, id) => {
      await kyselySql`INSERT INTO ${kyselySql.raw(orders)} (id) VALUES (${id})`.execute(
        handle as KyselyTransaction<unknown>,
      );
    },
    execute: async (handle, sql) => {
      await kyselySql.raw(sql).execute(handle as KyselyTransaction<unknown>);
    },
    transactions: () => transactions(db),
    isOwnHandle: (tx) => tx instanceof KyselyTransaction,
    close: () => db.destroy(),
  };
}

interface DrizzleDb {
  transaction<T>(fn: (tx: object) => Promise<T>): Promise<T>;
}

function drizzleKit(
  db: DrizzleDb,
  orders: string,
  transactions: (db: never) => Pick<SqlExecutor, 'transaction'>,
  close: () => Promise<void>,
): Kit {
  return {
    begin: (fn) => db.transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as { execute(query: unknown): Promise<unknown> }).execute(
        drizzleSql`INSERT INTO ${drizzleSql.raw(orders)} (id) VALUES (${id})`,
      );
    },
    execute: async (handle, sql) => {
      await (handle as { execute(query: unknown): Promise<unknown> }).execute(drizzleSql.raw(sql));
    },
    transactions: () => transactions(db as never),
    isOwnHandle: (tx) =>
      typeof (tx as { rollback?: unknown }).rollback === 'function' &&
      typeof (tx as { select?: unknown }).select === 'function',
    close,
  };
}

function typeormKit(
  source: DataSource,
  orders: string,
  placeholder: string,
  transactions: typeof postgresEntry.typeormTransactions,
): Kit {
  return {
    begin: (fn) => source.transaction((manager) => fn(manager)),
    insert: async (handle, id) => {
      await (handle as EntityManager).query(`INSERT INTO ${orders} (id) VALUES (${placeholder})`, [id]);
    },
    execute: async (handle, sql) => {
      await (handle as EntityManager).query(sql);
    },
    transactions: () => transactions(source),
    isOwnHandle: (tx) => tx instanceof EntityManager,
    close: () => source.destroy(),
  };
}

interface MikroOrmLike {
  em: {
    fork(): { transactional<T>(fn: (em: object) => Promise<T>): Promise<T> };
  };
  close(force: boolean): Promise<void>;
}
interface MikroEmLike {
  getConnection(): { execute(sql: string, params: unknown[], method: 'run', ctx: unknown): Promise<unknown> };
  getTransactionContext(): unknown;
}

function mikroOrmKit(
  orm: MikroOrmLike,
  ownEntityManager: abstract new (...args: never[]) => object,
  orders: string,
  transactions: typeof postgresEntry.mikroOrmTransactions,
): Kit {
  return {
    begin: (fn) => orm.em.fork().transactional((em) => fn(em)),
    insert: async (handle, id) => {
      const em = handle as unknown as MikroEmLike;
      await em
        .getConnection()
        .execute(`INSERT INTO ${orders} (id) VALUES (?)`, [id], 'run', em.getTransactionContext());
    },
    execute: async (handle, sql) => {
      const em = handle as unknown as MikroEmLike;
      await em.getConnection().execute(sql, [], 'run', em.getTransactionContext());
    },
    transactions: () => transactions(orm.em.fork() as never),
    isOwnHandle: (tx) => tx instanceof ownEntityManager,
    close: () => orm.close(true),
  };
}

interface PrismaLikeClient {
  $transaction<T>(fn: (tx: object) => Promise<T>): Promise<T>;
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>;
  $disconnect(): Promise<void>;
}
type PrismaModule = { PrismaClient: new (options: object) => PrismaLikeClient };
const prismaGenerated = new Map<string, Promise<PrismaModule>>();

/**
 * The Prisma client generated from `dir`/schema.prisma by Prisma's Rust-free generator (no query
 * engine binary), once per test file. `prisma generate` wants the schema engine binary on disk,
 * which only Prisma's own download server has (not the npm registry); generating a client does
 * not run it, so any existing file stands in for it.
 */
function prismaClient(dir: 'prisma' | 'prisma-mysql'): Promise<PrismaModule> {
  let generated = prismaGenerated.get(dir);
  if (!generated) {
    execFileSync(
      process.execPath,
      ['node_modules/prisma/build/index.js', 'generate', '--schema', `test/transactions/${dir}/schema.prisma`],
      {
        env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
        stdio: 'pipe',
      },
    );
    // Literal paths: the test runner resolves a dynamic import only when it can read its path.
    generated = (
      dir === 'prisma'
        ? import('./prisma/generated/client.js' as string)
        : import('./prisma-mysql/generated/client.js' as string)
    ) as Promise<PrismaModule>;
    prismaGenerated.set(dir, generated);
  }
  return generated;
}

function prismaKit(
  prisma: PrismaLikeClient,
  orders: string,
  placeholder: string,
  transactions: typeof postgresEntry.prismaTransactions,
): Kit {
  return {
    begin: (fn) => prisma.$transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as PrismaLikeClient).$executeRawUnsafe(`INSERT INTO ${orders} (id) VALUES (${placeholder})`, id);
    },
    execute: async (handle, sql) => {
      await (handle as PrismaLikeClient).$executeRawUnsafe(sql);
    },
    transactions: () => transactions(prisma as never),
    isOwnHandle: (tx) =>
      typeof (tx as PrismaLikeClient).$executeRawUnsafe === 'function' && !('$disconnect' in (tx as object)),
    close: () => prisma.$disconnect(),
  };
}

/** PostgreSQL: pools of two connections. */
const postgres: Connectors = {
  connection: pgConnection,
  entry: postgresEntry,
  placeholder: '$1',
  driver: {
    name: 'pg',
    library: 'pg client',
    async open(orders, database = pgConnection.database) {
      const pool = createPool({ max: 2, database });
      return {
        begin: (fn) =>
          driverTransaction(
            () => pool.connect(),
            (client, statement) => client.query(statement),
            fn,
          ),
        insert: async (handle, id) => {
          await (handle as pg.PoolClient).query(`INSERT INTO ${orders} (id) VALUES ($1)`, [id]);
        },
        execute: async (handle, sql) => {
          await (handle as pg.PoolClient).query(sql);
        },
        transactions: () => undefined,
        isOwnHandle: isDriverConnection,
        close: () => pool.end(),
      };
    },
  },
  kysely: (database) =>
    new Kysely<unknown>({ dialect: new PostgresDialect({ pool: createPool({ max: 2, database }) }) }),
  async drizzle(database) {
    const pool = createPool({ max: 2, database });
    return { db: pgDrizzle(pool), close: () => pool.end() };
  },
  async typeorm(database) {
    const { host, port, user: username, password } = pgConnection;
    const source = new DataSource({ type: 'postgres', host, port, username, password, database, poolSize: 2 });
    return source.initialize();
  },
  mikroOrm: async (database) =>
    (await PgMikroORM.init(mikroOrmOptions(pgConnection, database, { min: 0, max: 2 }))) as unknown as MikroOrmLike,
  mikroEntityManager: PgMikroEntityManager,
  // Through its PostgreSQL driver adapter, with the client generated from prisma/schema.prisma.
  async prisma(database) {
    const { PrismaClient } = await prismaClient('prisma');
    const { host, port, user, password } = pgConnection;
    const auth = password ? `${user}:${encodeURIComponent(password)}` : user;
    return new PrismaClient({
      adapter: new PrismaPg({ connectionString: `postgresql://${auth}@${host}:${port}/${database}`, max: 2 }),
    });
  },
};

/** MariaDB: each library on one connection whose session is READ COMMITTED (what signals in a transaction need). */
const mariadb: Connectors = {
  connection: mysqlConnection,
  entry: mysqlEntry,
  placeholder: '?',
  driver: {
    // The driver itself: a mysql2 connection of a pool, after `beginTransaction()`.
    name: 'mysql2',
    library: 'mysql2',
    async open(orders, database = mysqlConnection.database) {
      const pool = createMysqlPool({ database, connectionLimit: 1 });
      await pool.query(READ_COMMITTED);
      const statements = {
        BEGIN: (c: mysql.PoolConnection) => c.beginTransaction(),
        COMMIT: (c: mysql.PoolConnection) => c.commit(),
        ROLLBACK: (c: mysql.PoolConnection) => c.rollback(),
      };
      return {
        begin: (fn) =>
          driverTransaction(
            () => pool.getConnection(),
            (connection, statement) => statements[statement](connection),
            fn,
          ),
        insert: async (handle, id) => {
          await (handle as mysql.PoolConnection).query(`INSERT INTO ${orders} (id) VALUES (?)`, [id]);
        },
        execute: async (handle, sql) => {
          await (handle as mysql.PoolConnection).query(sql);
        },
        transactions: () => undefined,
        isOwnHandle: isDriverConnection,
        close: () => pool.end(),
      };
    },
  },
  kysely(database) {
    const pool = mysqlCallbacks.createPool({ ...mysqlConnection, database, connectionLimit: 1 });
    pool.on('connection', (connection) => connection.query(READ_COMMITTED));
    return new Kysely<unknown>({ dialect: new MysqlDialect({ pool }) });
  },
  async drizzle(database) {
    const pool = createMysqlPool({ database, connectionLimit: 1 });
    await pool.query(READ_COMMITTED);
    return { db: mysqlDrizzle(pool), close: () => pool.end() };
  },
  async typeorm(database) {
    const { host, port, user: username, password } = mysqlConnection;
    const source = await new DataSource({
      type: 'mariadb',
      host,
      port,
      username,
      password,
      database,
      poolSize: 1,
    }).initialize();
    await source.query(READ_COMMITTED);
    return source;
  },
  async mikroOrm(database) {
    const orm = await MariaMikroORM.init(mikroOrmOptions(mysqlConnection, database, { min: 1, max: 1 }));
    await orm.em.getConnection().execute(READ_COMMITTED);
    return orm as unknown as MikroOrmLike;
  },
  mikroEntityManager: MariaMikroEntityManager,
  // Through its MariaDB driver adapter (the `mariadb` driver), with the client generated from prisma-mysql/schema.prisma.
  async prisma(database) {
    const { PrismaClient } = await prismaClient('prisma-mysql');
    const { host, port, user, password } = mysqlConnection;
    return new PrismaClient({
      adapter: new PrismaMariaDb({ host, port, user, password, database, connectionLimit: 1, initSql: READ_COMMITTED }),
    });
  },
};
