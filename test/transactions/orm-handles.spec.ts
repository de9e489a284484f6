// start() and signal() inside the application's transaction, with the server's driver and each
// library's handle (Kysely, Drizzle, TypeORM, MikroORM, Prisma; see orm-handles-kits.ts), on each
// SQL store: commit makes the instance visible and runs it (the worker
// polls once an hour here: PostgreSQL's wake-up goes out with the commit, MariaDB's wake-up poll
// finds it), nothing is visible before the commit, rollback leaves no trace, a failure inside the
// store (a start's, or a signal's after it stored itself) leaves the application's transaction
// usable and nothing of itself in it, and a handle on another database is refused, saying so.
// Then ctx.transaction() with the library's own handle (the store's `transactions` option), and
// that option on another database failing init().
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, WorkflowSignal, systemClock, type WorkflowContext } from '../../src/index.js';
import { createPool } from '../support/postgres.js';
import {
  freshSchema,
  openSqlTarget,
  requireServer,
  SERVER,
  SQL_KINDS,
  type SqlKind,
  type SqlTarget,
} from '../support/sql-target.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { kitMakers, type Kit } from './orm-handles-kits.js';

/** What the scenario does differently per server. */
interface ServerParts {
  /** The failures inside the store: creating an instance `poison…` raises, so does waking an instance `wakefail…`. */
  triggers(target: SqlTarget): string[];
  /** Creates `database`, without the store's tables but with the application's `orders`. */
  createOther(target: SqlTarget, database: string, orders: string): Promise<void>;
  /** The ids of `orders` rows with `id` in `database`. */
  otherRows(target: SqlTarget, database: string, orders: string, id: string): Promise<unknown[]>;
  dropOther(target: SqlTarget, database: string): Promise<void>;
  /** `start()` / `signal()`'s refusal of a `library` handle on `database`. */
  refusal(library: string, schema: string, database: string): RegExp;
  /** init()'s refusal of a `transactions` option on `database`. */
  initRefusal(schema: string, database: string): RegExp;
  /** How the tests' titles say when a committed instance runs. */
  when: string;
  /** ctx.transaction()'s options in ReserveWorkflow. */
  reserve: { timeout?: string };
  /** The signals table's `key` column, quoted. */
  key: string;
}

const parts: Record<SqlKind, ServerParts> = {
  postgres: {
    triggers: (target) => [
      `CREATE FUNCTION "${target.schema}".refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.id LIKE 'poison%' THEN RAISE EXCEPTION 'poisoned instance %', NEW.id; END IF; RETURN NEW; END $$`,
      `CREATE TRIGGER refuse_poison BEFORE INSERT ON ${target.table('instances')} FOR EACH ROW EXECUTE FUNCTION "${target.schema}".refuse_poison()`,
      `CREATE FUNCTION "${target.schema}".refuse_wake() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.id LIKE 'wakefail%' AND OLD.status = 'suspended' AND NEW.wake_at IS NOT NULL THEN
          RAISE EXCEPTION 'wake-up refused'; END IF; RETURN NEW; END $$`,
      `CREATE TRIGGER refuse_wake BEFORE UPDATE ON ${target.table('instances')} FOR EACH ROW EXECUTE FUNCTION "${target.schema}".refuse_wake()`,
    ],
    async createOther(target, database, orders) {
      await target.query(`CREATE DATABASE "${database}"`);
      const pool = createPool({ max: 1, database });
      try {
        await pool.query(`CREATE SCHEMA "${target.schema}"`);
        await pool.query(`CREATE TABLE ${orders} (id varchar(255) PRIMARY KEY)`);
      } finally {
        await pool.end();
      }
    },
    async otherRows(_target, database, orders, id) {
      const pool = createPool({ max: 1, database });
      try {
        return (await pool.query(`SELECT id FROM ${orders} WHERE id = $1`, [id])).rows;
      } finally {
        await pool.end();
      }
    },
    dropOther: async (target, database) => {
      await target.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    },
    refusal: (library, schema) =>
      new RegExp(
        `the ${library} transaction reaches a database without the store's schema "${schema}" \\(.+\\)\\. Pass a transaction on the store's database`,
      ),
    initRefusal: (schema) =>
      new RegExp(
        `the \`transactions\` option's ORM reaches a database without the store's schema "${schema}"\\. Build it over the store's database`,
      ),
    when: ' at once',
    reserve: {},
    key: '"key"',
  },
  mysql: {
    triggers: (target) => [
      `CREATE TRIGGER ${target.schema}_refuse_poison BEFORE INSERT ON ${target.table('instances')} FOR EACH ROW
        BEGIN IF NEW.id LIKE 'poison%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned instance'; END IF; END`,
      `CREATE TRIGGER ${target.schema}_refuse_wake BEFORE UPDATE ON ${target.table('instances')} FOR EACH ROW
        BEGIN IF NEW.id LIKE 'wakefail%' AND OLD.status = 'suspended' AND NEW.wake_at IS NOT NULL THEN
          SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'wake-up refused'; END IF; END`,
    ],
    async createOther(target, database, orders) {
      await target.query(`CREATE DATABASE \`${database}\``);
      await target.query(`CREATE TABLE \`${database}\`.${orders} (id varchar(255) PRIMARY KEY)`);
    },
    otherRows: (target, database, orders, id) =>
      target.query(`SELECT id FROM \`${database}\`.${orders} WHERE id = ?`, [id]),
    dropOther: async (target, database) => {
      await target.query(`DROP DATABASE IF EXISTS \`${database}\``);
    },
    refusal: (library, schema, database) =>
      new RegExp(
        `the ${library} transaction reaches a database without the store's tables "${schema}_\\*" \\(.*${database}.*doesn't exist\\)\\. Pass a transaction on the store's database`,
      ),
    initRefusal: (schema, database) =>
      new RegExp(
        `the ORM \\(\`transactions\` option\\) transaction reaches a database without the store's tables "${schema}_\\*" \\(.*${database}`,
      ),
    when: '',
    reserve: { timeout: '10s' },
    key: '`key`',
  },
};

/** An error's message with its causes' (libraries wrap the database's error). */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (
    let e = error as { message?: unknown; cause?: unknown } | undefined;
    e && parts.length < 5;
    e = e.cause as typeof e
  )
    parts.push(String(e.message));
  return parts.join(' <- ');
}

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'ORM transaction handles');
  const server = parts[kind];
  const paid = new WorkflowSignal<{ amount: number }>(`orm-${kind}.paid`);
  const runs = new Map<string, number>();

  @Injectable()
  @Workflow(`orm-${kind}.order`)
  class OrderWorkflow {
    async run(ctx: WorkflowContext, input: { wait?: boolean }) {
      runs.set(ctx.id, (runs.get(ctx.id) ?? 0) + 1);
      if (input.wait) return ctx.waitForSignal('paid', paid, { key: ctx.id });
      return 'done';
    }
  }

  let currentKit: Kit | undefined;
  /** Run inside ReserveWorkflow's transaction after its insert (another worker taking the lease over). */
  let afterInsert: (id: string) => Promise<void> = async () => undefined;

  @Injectable()
  @Workflow(`orm-${kind}.reserve`)
  class ReserveWorkflow {
    async run(ctx: WorkflowContext) {
      return ctx.transaction(
        'reserve',
        async (tx: object) => {
          await currentKit!.insert(tx, `${ctx.id}:row`);
          await afterInsert(ctx.id);
          return { own: currentKit!.isOwnHandle(tx) };
        },
        server.reserve,
      );
    }
  }

  describe.skipIf(!available)(
    `start() and signal() in the application transaction, per library (${SERVER[kind]})`,
    () => {
      const schema = freshSchema(kind, 'tx_orm');
      /** A database of this suite's own, without the store's tables. */
      const otherDatabase = `${schema}_elsewhere`;
      let target: SqlTarget;
      let orders: string;

      beforeAll(async () => {
        target = openSqlTarget(kind, schema, 3);
        orders = target.table('orders');
        await target.store.init();
        await target.query(`CREATE TABLE ${orders} (id varchar(255) PRIMARY KEY)`);
        // The application's own table exists there too: only the store's tables are missing.
        await server.createOther(target, otherDatabase, orders);
        for (const statement of server.triggers(target)) await target.query(statement);
      });

      afterAll(async () => {
        if (target) await server.dropOther(target, otherDatabase);
        await target?.close({ drop: true });
      });

      const rowExists = async (id: string) =>
        (await target.query(`SELECT 1 FROM ${orders} WHERE id = ?`, [id])).length === 1;
      const suspended = async (id: string) => {
        for (let i = 0; (await target.store.get(id))?.status !== 'suspended'; i++) {
          if (i > 100) throw new Error(`${id} never suspended`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };

      for (const maker of kitMakers(kind)) {
        describe.sequential(`with the ${maker.name} handle`, () => {
          const name = maker.name;
          let kit: Kit;
          let app: TestApp;

          beforeAll(async () => {
            kit = await maker.open(orders);
            currentKit = kit;
            // One store for every library's application (on MariaDB each app.close() stops its wake-up poll, the next app starts it again).
            app = await createTestApp([OrderWorkflow], {
              store: target.store as never,
              clock: systemClock,
              worker: { concurrency: 2, pollInterval: '1h' },
            });
          });

          afterAll(async () => {
            await app?.close();
            await kit?.close();
          });

          it(`commit: the instance appears with the rows and runs${server.when}; before the commit nobody sees or runs it`, async () => {
            const id = `${name}-commit`;
            let seenInside: unknown = 'unset';
            let ranInside: unknown = 'unset';
            await kit.begin(async (tx) => {
              await kit.insert(tx, id);
              await app.client.start(OrderWorkflow, {}, { id, transaction: tx });
              await new Promise((resolve) => setTimeout(resolve, 200));
              seenInside = await target.store.get(id);
              // Read before the commit: once it lands, the worker may run the instance before the
              // library's own work after its COMMIT (MikroORM's, Drizzle's) hands control back here.
              ranInside = runs.get(id);
            });
            expect(seenInside).toBeNull();
            expect(ranInside).toBeUndefined();
            expect(await rowExists(id)).toBe(true);
            expect(await app.client.handle(id).result({ timeout: 5_000 })).toBe('done');
            expect(runs.get(id)).toBe(1);
          });

          it('rollback: neither the rows nor the instance remain', async () => {
            const id = `${name}-rollback`;
            await expect(
              kit.begin(async (tx) => {
                await kit.insert(tx, id);
                await app.client.start(OrderWorkflow, {}, { id, transaction: tx });
                throw new Error('the application changed its mind');
              }),
            ).rejects.toThrow('the application changed its mind');
            expect(await rowExists(id)).toBe(false);
            expect(await target.store.get(id)).toBeNull();
          });

          it('bulk actions in the transaction: a rollback leaves every instance as it was; committed, the cancels reach the worker', async () => {
            const ids = [1, 2].map((n) => `${name}-bulk-${n}`);
            const filter = { idPrefix: `${name}-bulk-` };
            for (const id of ids) await app.client.start(OrderWorkflow, { wait: true }, { id });
            for (const id of ids) await suspended(id);
            await expect(
              kit.begin(async (tx) => {
                await kit.insert(tx, `${name}-bulk-hold`);
                expect(await app.client.pauseMany(filter, { reason: 'hold', transaction: tx })).toEqual({
                  matched: 2,
                  changed: 2,
                });
                throw new Error('the application changed its mind');
              }),
            ).rejects.toThrow('the application changed its mind');
            expect(await rowExists(`${name}-bulk-hold`)).toBe(false);
            for (const id of ids) expect(await target.store.get(id)).toMatchObject({ status: 'suspended' });
            await kit.begin(async (tx) => {
              await kit.insert(tx, `${name}-bulk-stop`);
              expect(await app.client.cancelMany(filter, { reason: 'stop', transaction: tx })).toEqual({
                matched: 2,
                changed: 2,
              });
            });
            expect(await rowExists(`${name}-bulk-stop`)).toBe(true);
            // The worker polls once an hour: only the commit's notice wakes it to run the cancels.
            for (const id of ids)
              await expect(app.client.handle(id).result({ timeout: 5_000 })).rejects.toMatchObject({
                name: 'WorkflowCancelledError',
              });
          });

          it('a failure inside the store leaves the application transaction usable: its rows commit', async () => {
            const id = `${name}-survives`;
            await kit.begin(async (tx) => {
              const poisoned = await app.client
                .start(OrderWorkflow, {}, { id: `poison-${name}`, transaction: tx })
                .catch((e: unknown) => e);
              expect(messages(poisoned)).toMatch(/poisoned instance/);
              await expect(
                app.client.start(OrderWorkflow, {}, { id: 'x'.repeat(300), transaction: tx }),
              ).rejects.toThrow(RangeError);
              await kit.insert(tx, id);
            });
            expect(await rowExists(id)).toBe(true);
            expect(await target.store.get(`poison-${name}`)).toBeNull();
          });

          it("a signal that fails after storing itself leaves nothing of it in the application's transaction", async () => {
            const id = `wakefail-${name}`;
            await app.client.start(OrderWorkflow, { wait: true }, { id });
            await suspended(id);
            await kit.begin(async (tx) => {
              const error = await app.client
                .signal(paid, { amount: 1 }, { key: id, transaction: tx })
                .catch((e: unknown) => e);
              expect(messages(error)).toMatch(/wake-up refused/);
              await kit.insert(tx, `${id}:row`);
            });
            expect(await rowExists(`${id}:row`)).toBe(true);
            expect(
              await target.query(`SELECT id FROM ${target.table('signals')} WHERE ${server.key} = ?`, [id]),
            ).toEqual([]);
            expect((await target.store.get(id))?.status).toBe('suspended');
          });

          it(`signal: committed with the rows, it wakes the waiting instance${server.when}`, async () => {
            const id = `${name}-signal`;
            const handle = await app.client.start(OrderWorkflow, { wait: true }, { id });
            await suspended(id);
            await kit.begin(async (tx) => {
              await kit.insert(tx, `${id}:paid`);
              await app.client.signal(paid, { amount: 12 }, { key: id, transaction: tx });
            });
            expect(await handle.result({ timeout: 5_000 })).toEqual({ amount: 12 });
          });

          it('refuses a handle on another database, saying so, and leaves that transaction usable', async () => {
            const other = await maker.open(orders, otherDatabase);
            try {
              const id = `${name}-elsewhere`;
              const answer = await other.begin(async (tx) => {
                const started = await app.client
                  .start(OrderWorkflow, {}, { id, transaction: tx })
                  .catch((e: unknown) => e as Error);
                const signalled = await app.client
                  .signal(paid, { amount: 1 }, { key: id, transaction: tx })
                  .catch((e: unknown) => e as Error);
                await other.insert(tx, id);
                return { started, signalled };
              });
              for (const error of [answer.started, answer.signalled] as Error[]) {
                expect(error).toBeInstanceOf(TypeError);
                expect(error.message).toMatch(server.refusal(maker.library, schema, otherDatabase));
              }
              expect(await server.otherRows(target, otherDatabase, orders, id)).toHaveLength(1);
              expect(await target.store.get(id)).toBeNull();
            } finally {
              await other.close();
            }
          });

          it("ctx.transaction() with the library's handle (the store's `transactions` option)", async () => {
            const ormStore = target.storeWith({ transactions: kit.transactions() });
            const ormApp = await createTestApp([ReserveWorkflow], { store: ormStore as never, worker: false });
            // The other application's worker, woken by the new instance, may hold its row for a moment
            // while it looks for its own work: a drain then skips the locked row. Drain until it ran.
            const run = async (instance: string) => {
              for (let i = 0; (await target.store.get(instance))?.status === 'pending'; i++) {
                if (i > 50) throw new Error(`${instance} never ran`);
                if ((await ormApp.worker.drain()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
              }
            };
            try {
              const id = `${name}-ctx`;
              const handle = await ormApp.client.start(ReserveWorkflow, {}, { id });
              await run(id);
              expect(await handle.result()).toEqual({ own: true });
              expect(await rowExists(`${id}:row`)).toBe(true);
              // The lease lost during the callback: the library's transaction rolls back, rows and result alike.
              afterInsert = async (instance) => {
                await target.query(
                  `UPDATE ${target.table('instances')} SET lease_token = 'someone-else' WHERE id = ?`,
                  [instance],
                );
              };
              await ormApp.client.start(ReserveWorkflow, {}, { id: `${id}-lost` });
              await run(`${id}-lost`);
              expect(await rowExists(`${id}-lost:row`)).toBe(false);
              const lost = await target.store.get(`${id}-lost`, { journal: true });
              expect(lost!.journal!.some((entry) => entry.name === 'reserve')).toBe(false);
              expect(lost!.leaseToken).toBe('someone-else');
            } finally {
              afterInsert = async () => undefined;
              await ormApp.close();
            }
          });

          // The driver's transactions are the store's own pool's, always on the store's database: the
          // case exists for the ORMs only.
          if (!maker.driver)
            it('the `transactions` option on another database fails init(), saying so', async () => {
              const other = await maker.open(orders, otherDatabase);
              try {
                const wrong = target.storeWith({ transactions: other.transactions() });
                const error = await wrong.init().catch((e: unknown) => e as Error);
                expect(error).toBeInstanceOf(TypeError);
                expect(error!.message).toMatch(server.initRefusal(schema, otherDatabase));
              } finally {
                await other.close();
              }
            });
        });
      }
    },
  );
}
