// start() and signal() inside the application's transaction on MariaDB, with a mysql2 connection
// and Kysely, Drizzle, TypeORM, MikroORM (@mikro-orm/mariadb) and Prisma (@prisma/adapter-mariadb)
// handles: commit makes the instance visible and runs it (the worker polls once an hour; the
// store's wake-up poll finds it), nothing is visible before the commit, rollback leaves no trace, a
// failure inside the store leaves the application's transaction usable, and a handle on another
// database is refused, saying so. Then ctx.transaction() with the library's own handle (the
// store's `transactions` option).
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Kysely, MysqlDialect, Transaction as KyselyTransaction, sql as kyselySql } from 'kysely';
import { drizzle } from 'drizzle-orm/mysql2';
import { sql as drizzleSql } from 'drizzle-orm';
import { DataSource, EntityManager } from 'typeorm';
import { MikroORM, EntityManager as MikroEntityManager } from '@mikro-orm/mariadb';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { execFileSync } from 'node:child_process';
import mysqlCallbacks from 'mysql2';
import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, WorkflowSignal, systemClock, type WorkflowContext } from '../../src/index.js';
import {
  MySqlWorkflowStore,
  drizzleTransactions,
  fromMysql2,
  kyselyTransactions,
  mikroOrmTransactions,
  prismaTransactions,
  typeormTransactions,
} from '../../src/mysql/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { createTestApp, type TestApp } from '../unit/helpers.js';
import { createMysqlPool, dropTables, freshPrefix, mysqlConnection, requireMysql } from '../support/mysql.js';

const available = await requireMysql('ORM transaction handles on MariaDB');
const READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

interface Kit {
  name: string;
  begin<T>(fn: (handle: object) => Promise<T>): Promise<T>;
  insert(handle: object, id: string): Promise<void>;
  /** The same library connected to another database (one without the store's tables), for the refusal. */
  elsewhere(): Promise<Kit>;
  /** The store's `transactions` option for this library (`undefined`: the driver's, the default). */
  transactions(): Pick<SqlExecutor, 'transaction'> | undefined;
  /** Whether `tx` is the library's own transaction handle. */
  isOwnHandle(tx: unknown): boolean;
  close(): Promise<void>;
}

const prefix = freshPrefix('tx_orm');
const orders = `${prefix}_orders`;
/** A database of this file's own, without the store's tables. */
const otherDatabase = `${prefix}_elsewhere`;
const paid = new WorkflowSignal<{ amount: number }>('orm-mysql.paid');
const runs = new Map<string, number>();

@Injectable()
@Workflow('orm-mysql.order')
class OrderWorkflow {
  async run(ctx: WorkflowContext, input: { wait?: boolean }) {
    runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
    if (input.wait) return ctx.waitForSignal('paid', paid, { key: ctx.id });
    return 'done';
  }
}

// Each library on one connection whose session is READ COMMITTED (what signals in a transaction need).
async function kyselyKit(database = mysqlConnection.database): Promise<Kit> {
  const pool = mysqlCallbacks.createPool({ ...mysqlConnection, database, connectionLimit: 1 });
  pool.on('connection', (connection) => connection.query(READ_COMMITTED));
  const db = new Kysely<unknown>({ dialect: new MysqlDialect({ pool }) });
  return {
    name: 'Kysely',
    begin: (fn) => db.transaction().execute((trx) => fn(trx)),
    insert: async (handle, id) => {
      await kyselySql`INSERT INTO ${kyselySql.raw(orders)} (id) VALUES (${id})`.execute(handle as Kysely<unknown>);
    },
    elsewhere: () => kyselyKit(otherDatabase),
    transactions: () => kyselyTransactions(db),
    isOwnHandle: (tx) => tx instanceof KyselyTransaction,
    close: () => db.destroy(),
  };
}

async function drizzleKit(database = mysqlConnection.database): Promise<Kit> {
  const pool = createMysqlPool({ database, connectionLimit: 1 });
  await pool.query(READ_COMMITTED);
  const db = drizzle(pool);
  return {
    name: 'Drizzle',
    begin: (fn) => db.transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as typeof db).execute(drizzleSql`INSERT INTO ${drizzleSql.raw(orders)} (id) VALUES (${id})`);
    },
    elsewhere: () => drizzleKit(otherDatabase),
    transactions: () => drizzleTransactions(db),
    isOwnHandle: (tx) => typeof (tx as { rollback?: unknown }).rollback === 'function' && typeof (tx as { select?: unknown }).select === 'function',
    close: () => pool.end(),
  };
}

async function typeormKit(database = mysqlConnection.database): Promise<Kit> {
  const source = new DataSource({
    type: 'mariadb',
    host: mysqlConnection.host,
    port: mysqlConnection.port,
    username: mysqlConnection.user,
    password: mysqlConnection.password,
    database,
    poolSize: 1,
  });
  await source.initialize();
  await source.query(READ_COMMITTED);
  return {
    name: 'TypeORM',
    begin: (fn) => source.transaction((manager) => fn(manager)),
    insert: async (handle, id) => {
      await (handle as EntityManager).query(`INSERT INTO ${orders} (id) VALUES (?)`, [id]);
    },
    elsewhere: () => typeormKit(otherDatabase),
    transactions: () => typeormTransactions(source),
    isOwnHandle: (tx) => tx instanceof EntityManager,
    close: () => source.destroy(),
  };
}

/** The driver itself: a mysql2 connection of a pool, after `beginTransaction()`. */
async function mysql2Kit(database = mysqlConnection.database): Promise<Kit> {
  const pool = createMysqlPool({ database, connectionLimit: 1 });
  await pool.query(READ_COMMITTED);
  return {
    name: 'mysql2',
    begin: async (fn) => {
      const connection = await pool.getConnection();
      try {
        await connection.beginTransaction();
        const result = await fn(connection);
        await connection.commit();
        return result;
      } catch (error) {
        await connection.rollback();
        throw error;
      } finally {
        connection.release();
      }
    },
    insert: async (handle, id) => {
      await (handle as mysql.PoolConnection).query(`INSERT INTO ${orders} (id) VALUES (?)`, [id]);
    },
    elsewhere: () => mysql2Kit(otherDatabase),
    transactions: () => undefined,
    isOwnHandle: (tx) => typeof (tx as mysql.PoolConnection).query === 'function' && typeof (tx as mysql.PoolConnection).release === 'function',
    close: () => pool.end(),
  };
}

async function mikroOrmKit(database = mysqlConnection.database): Promise<Kit> {
  const orm = await MikroORM.init({
    dbName: database,
    host: mysqlConnection.host,
    port: mysqlConnection.port,
    user: mysqlConnection.user,
    password: mysqlConnection.password,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    pool: { min: 1, max: 1 },
    allowGlobalContext: true,
  });
  await orm.em.getConnection().execute(READ_COMMITTED);
  return {
    name: 'MikroORM',
    begin: (fn) => orm.em.fork().transactional((em) => fn(em)),
    insert: async (handle, id) => {
      const em = handle as MikroEntityManager;
      await em.getConnection().execute(`INSERT INTO ${orders} (id) VALUES (?)`, [id], 'run', em.getTransactionContext());
    },
    elsewhere: () => mikroOrmKit(otherDatabase),
    transactions: () => mikroOrmTransactions(orm.em.fork()),
    isOwnHandle: (tx) => tx instanceof MikroEntityManager,
    close: () => orm.close(true),
  };
}

/**
 * Prisma through its MariaDB driver adapter (the `mariadb` driver), with the client generated from
 * prisma-mysql/schema.prisma by Prisma's Rust-free generator: no query engine binary. `prisma
 * generate` wants the schema engine binary on disk, which only Prisma's own download server has
 * (not the npm registry); generating a client does not run it, so any existing file stands in.
 */
async function prismaKit(database = mysqlConnection.database): Promise<Kit> {
  prismaGenerated ??= (() => {
    execFileSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate', '--schema', 'test/transactions/prisma-mysql/schema.prisma'], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      stdio: 'pipe',
    });
    return import('./prisma-mysql/generated/client.js' as string) as Promise<{ PrismaClient: new (options: object) => PrismaLikeClient }>;
  })();
  const { PrismaClient } = await prismaGenerated;
  const { host, port, user, password } = mysqlConnection;
  const adapter = new PrismaMariaDb({ host, port, user, password, database, connectionLimit: 1, initSql: READ_COMMITTED });
  const prisma = new PrismaClient({ adapter });
  return {
    name: 'Prisma',
    begin: (fn) => prisma.$transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as PrismaLikeClient).$executeRawUnsafe(`INSERT INTO ${orders} (id) VALUES (?)`, id);
    },
    elsewhere: () => prismaKit(otherDatabase),
    transactions: () => prismaTransactions(prisma),
    isOwnHandle: (tx) => typeof (tx as PrismaLikeClient).$executeRawUnsafe === 'function' && !('$disconnect' in (tx as object)),
    close: () => prisma.$disconnect(),
  };
}

interface PrismaLikeClient {
  $transaction<T>(fn: (tx: object) => Promise<T>): Promise<T>;
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>;
  $disconnect(): Promise<void>;
}
let prismaGenerated: Promise<{ PrismaClient: new (options: object) => PrismaLikeClient }> | undefined;

let ownHandle: (tx: unknown) => boolean = () => false;
let currentKit: Kit | undefined;
/** Run inside ReserveWorkflow's transaction after its insert (another worker taking the lease over). */
let afterInsert: (id: string) => Promise<void> = async () => undefined;

@Injectable()
@Workflow('orm-mysql.reserve')
class ReserveWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.transaction(
      'reserve',
      async (tx: object) => {
        await currentKit!.insert(tx, `${ctx.id}:row`);
        await afterInsert(ctx.id);
        return { own: ownHandle(tx) };
      },
      { timeout: '10s' },
    );
  }
}

describe.skipIf(!available)('start() and signal() in the application transaction, per library (MariaDB)', () => {
  let pool: mysql.Pool;
  let store: MySqlWorkflowStore;

  beforeAll(async () => {
    pool = createMysqlPool({ connectionLimit: 3 });
    store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: prefix });
    await store.init();
    await pool.query(`CREATE TABLE ${orders} (id varchar(255) PRIMARY KEY)`);
    await pool.query(`CREATE DATABASE \`${otherDatabase}\``);
    // The application's own table exists there too: only the store's tables are missing.
    await pool.query(`CREATE TABLE \`${otherDatabase}\`.${orders} (id varchar(255) PRIMARY KEY)`);
    // A failure inside the store: creating an instance with this id raises in the database.
    await pool.query(`CREATE TRIGGER ${prefix}_refuse_poison BEFORE INSERT ON ${prefix}_instances FOR EACH ROW
      BEGIN IF NEW.id LIKE 'poison%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned instance'; END IF; END`);
    // A failure in a signal's last statement (its wake-ups), after it stored the signal.
    await pool.query(`CREATE TRIGGER ${prefix}_refuse_wake BEFORE UPDATE ON ${prefix}_instances FOR EACH ROW
      BEGIN IF NEW.id LIKE 'wakefail%' AND OLD.status = 'suspended' AND NEW.wake_at IS NOT NULL THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'wake-up refused'; END IF; END`);
  });

  afterAll(async () => {
    await store?.close();
    await pool?.query(`DROP DATABASE IF EXISTS \`${otherDatabase}\``);
    if (pool) await dropTables(pool, prefix);
    await pool?.end();
  });

  const rowExists = async (id: string) => (await pool.query<mysql.RowDataPacket[]>(`SELECT 1 FROM ${orders} WHERE id = ?`, [id]))[0].length === 1;

  for (const makeKit of [() => mysql2Kit(), () => kyselyKit(), () => drizzleKit(), () => typeormKit(), () => mikroOrmKit(), () => prismaKit()]) {
    describe.sequential('with a library handle', () => {
      let kit: Kit;
      let app: TestApp;

      beforeAll(async () => {
        kit = await makeKit();
        currentKit = kit;
        ownHandle = kit.isOwnHandle;
        // One store for every library's application: each app.close() stops its wake-up poll, the next app starts it again.
        app = await createTestApp([OrderWorkflow], { store: store as never, clock: systemClock, worker: { concurrency: 2, pollInterval: '1h' } });
      });

      afterAll(async () => {
        await app?.close();
        await kit?.close();
      });

      it('commit: the instance appears with the rows and runs; before the commit nobody sees or runs it', async () => {
        const id = `${kit.name}-commit`;
        let seenInside: unknown = 'unset';
        await kit.begin(async (tx) => {
          await kit.insert(tx, id);
          await app.client.start(OrderWorkflow, {}, { id, transaction: tx });
          await new Promise((resolve) => setTimeout(resolve, 200));
          seenInside = await store.get(id);
        });
        expect(seenInside).toBeNull();
        expect(runs.get(id)).toBeUndefined();
        expect(await rowExists(id)).toBe(true);
        expect(await app.client.handle(id).result({ timeout: 5_000 })).toBe('done');
      });

      it('rollback: neither the rows nor the instance remain', async () => {
        const id = `${kit.name}-rollback`;
        await expect(
          kit.begin(async (tx) => {
            await kit.insert(tx, id);
            await app.client.start(OrderWorkflow, {}, { id, transaction: tx });
            throw new Error('the application changed its mind');
          }),
        ).rejects.toThrow('the application changed its mind');
        expect(await rowExists(id)).toBe(false);
        expect(await store.get(id)).toBeNull();
      });

      it('a failure inside the store leaves the application transaction usable: its rows commit', async () => {
        const id = `${kit.name}-survives`;
        await kit.begin(async (tx) => {
          const poisoned = await app.client.start(OrderWorkflow, {}, { id: `poison-${kit.name}`, transaction: tx }).catch((e: unknown) => e as Error);
          expect(String((poisoned as Error).message) + String(((poisoned as Error).cause as Error | undefined)?.message)).toMatch(/poisoned instance/);
          await expect(app.client.start(OrderWorkflow, {}, { id: 'x'.repeat(300), transaction: tx })).rejects.toThrow(RangeError);
          await kit.insert(tx, id);
        });
        expect(await rowExists(id)).toBe(true);
        expect(await store.get(`poison-${kit.name}`)).toBeNull();
      });

      it("a signal that fails after storing itself leaves nothing of it in the application's transaction", async () => {
        const id = `wakefail-${kit.name}`;
        await app.client.start(OrderWorkflow, { wait: true }, { id });
        for (let i = 0; (await store.get(id))?.status !== 'suspended'; i++) {
          if (i > 100) throw new Error(`${id} never suspended`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await kit.begin(async (tx) => {
          const error = (await app.client.signal(paid, { amount: 1 }, { key: id, transaction: tx }).catch((e: unknown) => e)) as Error;
          expect(`${error.message} ${(error.cause as Error | undefined)?.message}`).toMatch(/wake-up refused/);
          await kit.insert(tx, `${id}:row`);
        });
        expect(await rowExists(`${id}:row`)).toBe(true);
        const [signals] = await pool.query<mysql.RowDataPacket[]>(`SELECT id FROM ${prefix}_signals WHERE \`key\` = ?`, [id]);
        expect(signals).toEqual([]);
        expect((await store.get(id))?.status).toBe('suspended');
      });

      it('signal: committed with the rows, it wakes the waiting instance', async () => {
        const id = `${kit.name}-signal`;
        const handle = await app.client.start(OrderWorkflow, { wait: true }, { id });
        for (let i = 0; (await store.get(id))?.status !== 'suspended'; i++) {
          if (i > 100) throw new Error(`${id} never suspended`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await kit.begin(async (tx) => {
          await kit.insert(tx, `${id}:paid`);
          await app.client.signal(paid, { amount: 12 }, { key: id, transaction: tx });
        });
        expect(await handle.result({ timeout: 5_000 })).toEqual({ amount: 12 });
      });

      it('refuses a handle on another database, saying so, and leaves that transaction usable', async () => {
        const other = await kit.elsewhere();
        try {
          const id = `${kit.name}-elsewhere`;
          const answer = await other.begin(async (tx) => {
            const started = await app.client.start(OrderWorkflow, {}, { id, transaction: tx }).catch((e: unknown) => e as Error);
            const signalled = await app.client.signal(paid, { amount: 1 }, { key: id, transaction: tx }).catch((e: unknown) => e as Error);
            await kit.insert(tx, id);
            return { started, signalled };
          });
          for (const error of [answer.started, answer.signalled] as Error[]) {
            expect(error).toBeInstanceOf(TypeError);
            expect(error.message).toMatch(new RegExp(`${kit.name} transaction reaches a database without the store's tables "${prefix}_\\*" \\(.*${otherDatabase}.*doesn't exist\\)\\. Pass a transaction on the store's database`));
          }
          const [rows] = await pool.query<mysql.RowDataPacket[]>(`SELECT id FROM \`${otherDatabase}\`.${orders} WHERE id = ?`, [id]);
          expect(rows).toHaveLength(1);
          expect(await store.get(id)).toBeNull();
        } finally {
          await other.close();
        }
      });

      it("ctx.transaction() with the library's handle (the store's `transactions` option)", async () => {
        const ormStore = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: prefix, transactions: kit.transactions() });
        const ormApp = await createTestApp([ReserveWorkflow], { store: ormStore as never, worker: false });
        // The other application's worker, woken by the new instance, may hold its row for a moment
        // while it looks for its own work: a drain then skips the locked row. Drain until it ran.
        const run = async (instance: string) => {
          for (let i = 0; (await store.get(instance))?.status === 'pending'; i++) {
            if (i > 50) throw new Error(`${instance} never ran`);
            if ((await ormApp.worker.drain()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
          }
        };
        try {
          const id = `${kit.name}-ctx`;
          const handle = await ormApp.client.start(ReserveWorkflow, {}, { id });
          await run(id);
          expect(await handle.result()).toEqual({ own: true });
          expect(await rowExists(`${id}:row`)).toBe(true);
          // The lease lost during the callback: the library's transaction rolls back, rows and result alike.
          afterInsert = async (instance) => {
            await pool.query(`UPDATE ${prefix}_instances SET lease_token = 'someone-else' WHERE id = ?`, [instance]);
          };
          await ormApp.client.start(ReserveWorkflow, {}, { id: `${id}-lost` });
          await run(`${id}-lost`);
          expect(await rowExists(`${id}-lost:row`)).toBe(false);
          const lost = await store.get(`${id}-lost`, { journal: true });
          expect(lost!.journal!.some((entry) => entry.name === 'reserve')).toBe(false);
          expect(lost!.leaseToken).toBe('someone-else');
        } finally {
          afterInsert = async () => undefined;
          await ormApp.close();
        }
      });

      it('the `transactions` option on another database fails init(), saying so', async () => {
        const other = await kit.elsewhere();
        try {
          const transactions = other.transactions();
          if (!transactions) return; // the driver's: the store's own pool, always the store's database
          const wrong = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: prefix, transactions });
          const error = await wrong.init().catch((e: unknown) => e as Error);
          expect(error).toBeInstanceOf(TypeError);
          expect(error!.message).toMatch(new RegExp(`the ORM \\(\`transactions\` option\\) transaction reaches a database without the store's tables "${prefix}_\\*" \\(.*${otherDatabase}`));
        } finally {
          await other.close();
        }
      });
    });
  }
});
