// start() and signal() inside the application's transaction, with each library's handle: commit
// makes the instance visible and runs it at once (the wake-up goes out with the commit: the worker
// polls once an hour here), rollback leaves no trace, a failure inside the store leaves the
// application's transaction usable, and a handle on another database is refused, saying so. Then
// ctx.transaction() with the library's own handle (the store's `transactions` option).
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Kysely, PostgresDialect, Transaction as KyselyTransaction, sql as kyselySql } from 'kysely';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql as drizzleSql } from 'drizzle-orm';
import { DataSource, EntityManager } from 'typeorm';
import { MikroORM, EntityManager as MikroEntityManager } from '@mikro-orm/postgresql';
import { PrismaPg } from '@prisma/adapter-pg';
import { execFileSync } from 'node:child_process';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, WorkflowSignal, systemClock, type WorkflowContext } from '../../src/index.js';
import {
  PostgresWorkflowStore,
  drizzleTransactions,
  fromPg,
  kyselyTransactions,
  mikroOrmTransactions,
  prismaTransactions,
  typeormTransactions,
} from '../../src/postgres/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { createTestApp, type TestApp } from '../unit/helpers.js';
import { createPool, freshSchemaName, pgConnection, requirePostgres } from '../support/postgres.js';

const available = await requirePostgres('ORM transaction handles on PostgreSQL');

/** One library, as the tests drive it. */
interface Kit {
  name: string;
  /** Runs `fn` in one of the library's transactions; resolves after the commit. */
  begin<T>(fn: (handle: object) => Promise<T>): Promise<T>;
  /** Inserts an application row with the library, in the transaction `handle`. */
  insert(handle: object, id: string): Promise<void>;
  /** The store's `transactions` option for this library. */
  transactions(): Pick<SqlExecutor, 'transaction'>;
  /** Whether `tx` is the library's own transaction handle. */
  isOwnHandle(tx: unknown): boolean;
  /** The same library connected to another database (`postgres`), for the refusal. */
  elsewhere(): Promise<{ begin<T>(fn: (handle: object) => Promise<T>): Promise<T>; close(): Promise<void> }>;
  close(): Promise<void>;
}

const schema = freshSchemaName('tx_orm');
const orders = `"${schema}".orders`;
const paid = new WorkflowSignal<{ amount: number }>('orm.paid');
const runs = new Map<string, number>();

@Injectable()
@Workflow('orm.order')
class OrderWorkflow {
  async run(ctx: WorkflowContext, input: { wait?: boolean }) {
    runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
    if (input.wait) return ctx.waitForSignal('paid', paid, { key: ctx.id });
    return 'done';
  }
}

let ownHandle: (tx: unknown) => boolean = () => false;
/** Run inside ReserveWorkflow's transaction after its insert (another worker taking the lease over). */
let afterInsert: (id: string) => Promise<void> = async () => undefined;

@Injectable()
@Workflow('orm.reserve')
class ReserveWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.transaction('reserve', async (tx: object) => {
      await currentKit!.insert(tx, `${ctx.id}:row`);
      await afterInsert(ctx.id);
      return { own: ownHandle(tx) };
    });
  }
}

let currentKit: Kit | undefined;

/** An error's message with its causes' (libraries wrap the database's error). */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: unknown; cause?: unknown } | undefined; e && parts.length < 5; e = e.cause as typeof e) parts.push(String(e.message));
  return parts.join(' <- ');
}

function kyselyKit(database = pgConnection.database): Kit & { db: Kysely<unknown> } {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: createPool({ max: 2, database }) }) });
  return {
    name: 'Kysely',
    db,
    begin: (fn) => db.transaction().execute((trx) => fn(trx)),
    insert: async (handle, id) => {
      await kyselySql`INSERT INTO ${kyselySql.raw(orders)} (id) VALUES (${id})`.execute(handle as KyselyTransaction<unknown>);
    },
    transactions: () => kyselyTransactions(db),
    isOwnHandle: (tx) => tx instanceof KyselyTransaction,
    elsewhere: async () => {
      const other = kyselyKit('postgres');
      return { begin: other.begin, close: other.close };
    },
    close: () => db.destroy(),
  };
}

function drizzleKit(database = pgConnection.database): Kit {
  const pool = createPool({ max: 2, database });
  const db = drizzle(pool);
  return {
    name: 'Drizzle',
    begin: (fn) => db.transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as typeof db).execute(drizzleSql`INSERT INTO ${drizzleSql.raw(orders)} (id) VALUES (${id})`);
    },
    transactions: () => drizzleTransactions(db),
    isOwnHandle: (tx) => typeof (tx as { rollback?: unknown }).rollback === 'function' && typeof (tx as { select?: unknown }).select === 'function',
    elsewhere: async () => {
      const other = drizzleKit('postgres');
      return { begin: other.begin, close: other.close };
    },
    close: () => pool.end(),
  };
}

async function typeormKit(database = pgConnection.database): Promise<Kit> {
  const source = new DataSource({
    type: 'postgres',
    host: pgConnection.host,
    port: pgConnection.port,
    username: pgConnection.user,
    password: pgConnection.password,
    database,
    poolSize: 2,
  });
  await source.initialize();
  return {
    name: 'TypeORM',
    begin: (fn) => source.transaction((manager) => fn(manager)),
    insert: async (handle, id) => {
      await (handle as EntityManager).query(`INSERT INTO ${orders} (id) VALUES ($1)`, [id]);
    },
    transactions: () => typeormTransactions(source),
    isOwnHandle: (tx) => tx instanceof EntityManager,
    elsewhere: async () => {
      const other = await typeormKit('postgres');
      return { begin: other.begin, close: other.close };
    },
    close: () => source.destroy(),
  };
}

async function mikroOrmKit(database = pgConnection.database): Promise<Kit> {
  const orm = await MikroORM.init({
    dbName: database,
    host: pgConnection.host,
    port: pgConnection.port,
    user: pgConnection.user,
    password: pgConnection.password,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    pool: { min: 0, max: 2 },
    allowGlobalContext: true,
  });
  return {
    name: 'MikroORM',
    begin: (fn) => orm.em.fork().transactional((em) => fn(em)),
    insert: async (handle, id) => {
      const em = handle as MikroEntityManager;
      await em.getConnection().execute(`INSERT INTO ${orders} (id) VALUES (?)`, [id], 'run', em.getTransactionContext());
    },
    transactions: () => mikroOrmTransactions(orm.em.fork()),
    isOwnHandle: (tx) => tx instanceof MikroEntityManager,
    elsewhere: async () => {
      const other = await mikroOrmKit('postgres');
      return { begin: other.begin, close: other.close };
    },
    close: () => orm.close(true),
  };
}

/**
 * Prisma through its PostgreSQL driver adapter, with the client generated from
 * prisma/schema.prisma by Prisma's Rust-free generator. `prisma generate` wants the schema
 * engine binary on disk, which only Prisma's own download server has (not the npm registry);
 * generating a client does not run it, so any existing file stands in for it.
 */
async function prismaKit(database = pgConnection.database): Promise<Kit> {
  prismaGenerated ??= (() => {
    execFileSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate', '--schema', 'test/transactions/prisma/schema.prisma'], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      stdio: 'pipe',
    });
    return import('./prisma/generated/client.js' as string) as Promise<{ PrismaClient: new (options: object) => PrismaLikeClient }>;
  })();
  const { PrismaClient } = await prismaGenerated;
  const { host, port, user, password } = pgConnection;
  const auth = password ? `${user}:${encodeURIComponent(password)}` : user;
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: `postgresql://${auth}@${host}:${port}/${database}`, max: 2 }) });
  return {
    name: 'Prisma',
    begin: (fn) => prisma.$transaction((tx) => fn(tx)),
    insert: async (handle, id) => {
      await (handle as PrismaLikeClient).$executeRawUnsafe(`INSERT INTO ${orders} (id) VALUES ($1)`, id);
    },
    transactions: () => prismaTransactions(prisma),
    isOwnHandle: (tx) => typeof (tx as PrismaLikeClient).$executeRawUnsafe === 'function' && !('$disconnect' in (tx as object)),
    elsewhere: async () => {
      const other = await prismaKit('postgres');
      return { begin: other.begin, close: other.close };
    },
    close: () => prisma.$disconnect(),
  };
}

interface PrismaLikeClient {
  $transaction<T>(fn: (tx: object) => Promise<T>): Promise<T>;
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>;
  $disconnect(): Promise<void>;
}
let prismaGenerated: Promise<{ PrismaClient: new (options: object) => PrismaLikeClient }> | undefined;

const kits: Array<() => Promise<Kit>> = [async () => kyselyKit(), async () => drizzleKit(), () => typeormKit(), () => mikroOrmKit(), () => prismaKit()];

describe.skipIf(!available)('start() and signal() in the application transaction, per library (PostgreSQL)', () => {
  let pool: pg.Pool;
  let store: PostgresWorkflowStore;

  beforeAll(async () => {
    pool = createPool({ max: 3 });
    store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    await store.init();
    await pool.query(`CREATE TABLE ${orders} (id text PRIMARY KEY)`);
    // A failure inside the store: creating an instance with this id raises in the database.
    await pool.query(`CREATE FUNCTION "${schema}".refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.id LIKE 'poison%' THEN RAISE EXCEPTION 'poisoned instance %', NEW.id; END IF; RETURN NEW; END $$`);
    await pool.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON "${schema}".instances FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_poison()`);
  });

  afterAll(async () => {
    await store?.close();
    await pool?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool?.end();
  });

  const rowExists = async (id: string) => (await pool.query(`SELECT 1 FROM ${orders} WHERE id = $1`, [id])).rowCount === 1;

  for (const makeKit of kits) {
    describe.sequential('with a library handle', () => {
      let kit: Kit;
      let app: TestApp;

      beforeAll(async () => {
        kit = await makeKit();
        currentKit = kit;
        ownHandle = kit.isOwnHandle;
        app = await createTestApp([OrderWorkflow], {
          store: store as never,
          clock: systemClock,
          worker: { concurrency: 2, pollInterval: '1h' },
        });
      });

      afterAll(async () => {
        await app?.close();
        await kit?.close();
      });

      it('commit: the instance appears with the rows and runs at once; before the commit nobody sees or runs it', async () => {
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
        expect(runs.get(id)).toBe(1);
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
          const poisoned = await app.client.start(OrderWorkflow, {}, { id: `poison-${kit.name}`, transaction: tx }).catch((e: unknown) => e);
          expect(messages(poisoned)).toMatch(/poisoned instance/);
          await expect(app.client.start(OrderWorkflow, {}, { id: 'x'.repeat(300), transaction: tx })).rejects.toThrow(RangeError);
          await kit.insert(tx, id);
        });
        expect(await rowExists(id)).toBe(true);
        expect(await store.get(`poison-${kit.name}`)).toBeNull();
      });

      it('signal: committed with the rows, it wakes the waiting instance at once', async () => {
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
          const answer = await other.begin(async (tx) => {
            const error = await app.client.start(OrderWorkflow, {}, { id: `${kit.name}-elsewhere`, transaction: tx }).catch((e: unknown) => e as Error);
            return { error, after: 'still usable' };
          });
          expect(answer.after).toBe('still usable');
          expect(answer.error).toBeInstanceOf(TypeError);
          expect((answer.error as Error).message).toMatch(new RegExp(`${kit.name} transaction .*schema "${schema}".* store's database`));
        } finally {
          await other.close();
        }
        expect(await store.get(`${kit.name}-elsewhere`)).toBeNull();
      });

      it("ctx.transaction() with the library's handle (the store's `transactions` option)", async () => {
        const ormStore = new PostgresWorkflowStore({ executor: fromPg(pool), schema, transactions: kit.transactions() });
        const ormApp = await createTestApp([ReserveWorkflow], { store: ormStore as never, worker: false });
        try {
          const id = `${kit.name}-ctx`;
          const handle = await ormApp.client.start(ReserveWorkflow, {}, { id });
          await ormApp.worker.drain();
          expect(await handle.result()).toEqual({ own: true });
          expect(await rowExists(`${id}:row`)).toBe(true);
          // The lease lost during the callback: the ORM's transaction rolls back, rows and result alike.
          afterInsert = async (instance) => {
            await pool.query(`UPDATE "${schema}".instances SET lease_token = 'someone-else' WHERE id = $1`, [instance]);
          };
          await ormApp.client.start(ReserveWorkflow, {}, { id: `${id}-lost` });
          await ormApp.worker.drain();
          expect(await rowExists(`${id}-lost:row`)).toBe(false);
          const lost = await store.get(`${id}-lost`, { journal: true });
          expect(lost!.journal!.some((entry) => entry.name === 'reserve')).toBe(false);
          expect(lost!.leaseToken).toBe('someone-else');
        } finally {
          afterInsert = async () => undefined;
          await ormApp.close();
        }
      });
    });
  }
});
