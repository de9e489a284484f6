// ctx.transaction() through the store's `transactions` option (each ORM's own handle) on MariaDB,
// when InnoDB rolls the whole transaction back under the callback (a real deadlock with another
// connection) and the callback catches the error and goes on. The session is out of the
// transaction then: the callback's later statements commit on their own (its own code: nothing
// of the store is in their path), and without the store's refusal the step's result would commit
// on its own too, recording the step as done with none of the rows written before the deadlock.
// Both ways the store can tell: MariaDB's `@@in_transaction`, and on the common ground of MySQL 8.0
// (which has no such variable) a savepoint released.
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { isTransactionConflict } from '../../src/engine/transaction-operation.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import type { OrmTransactions } from '../../src/sql/handles/handle-kind.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { createTestApp } from '../support/nest-test-app.js';
import { commonGroundOnly, createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';
import { createDeadlockTables, deadlock, type DeadlockTables } from '../support/mysql-deadlock.js';
import { kitMakers, type Kit } from './orm-handles-kits.js';

const available = await requireMysql('ctx.transaction() through an ORM, rolled back by the server on MariaDB');

/** What the workflow below does and saw, per order. */
const plan = {
  /** The library whose handle the step's callback gets. */
  kit: undefined as Kit | undefined,
  tables: undefined as DeadlockTables | undefined,
  /** The application's other connections: the other side of the deadlock. */
  others: undefined as mysql.Pool | undefined,
  calls: new Map<string, number>(),
  /** The error the first call caught (and swallowed). */
  caught: new Map<string, unknown>(),
};

@Injectable()
@Workflow('tx-orm.swallowed-deadlock')
class SwallowedDeadlockWorkflow {
  async run(ctx: WorkflowContext, input: { order: string }) {
    return ctx.transaction(
      'save-order',
      async (tx: object, { attempt }) => {
        const kit = plan.kit!;
        const call = (plan.calls.get(input.order) ?? 0) + 1;
        plan.calls.set(input.order, call);
        await kit.insert(tx, `${input.order}/before-${call}`);
        // The first call catches the deadlock and goes on as if nothing happened.
        if (call === 1)
          plan.caught.set(input.order, await deadlock(plan.others!, plan.tables!, (sql) => kit.execute(tx, sql)));
        await kit.insert(tx, `${input.order}/after-${call}`);
        return { order: input.order, call, attempt };
      },
      { retry: { attempts: 2, backoff: '1s' } },
    );
  }
}

/** `transactions`, with the text of each statement the store sends in its transactions pushed to `sent`. */
function recording(transactions: OrmTransactions, sent: string[]): OrmTransactions {
  const wrap = (inner: Pick<SqlExecutor, 'transaction'>): Pick<SqlExecutor, 'transaction'> => ({
    transaction: (fn) =>
      inner.transaction((tx) =>
        fn({ ...tx, query: (sql, params, options) => (sent.push(sql), tx.query(sql, params, options)) }),
      ),
  });
  return { ...wrap(transactions), forDialect: (dialect) => wrap(transactions.forDialect(dialect)) };
}

const LOCK_READING_SESSION = expect.stringMatching(
  /^SELECT lease_token, runs, @@in_transaction AS in_transaction FROM .* FOR UPDATE$/,
);

/** Each server, and how the store asks it, in each of the two attempts, whether the session is still in the transaction. */
const SERVERS = [
  {
    name: 'MariaDB',
    executor: (pool: mysql.Pool) => fromMysql2(pool),
    asks: [LOCK_READING_SESSION, LOCK_READING_SESSION],
  },
  {
    name: 'the common ground of MySQL 8.0',
    executor: (pool: mysql.Pool) => commonGroundOnly(fromMysql2(pool)),
    asks: [
      'SAVEPOINT nest_workflows_probe',
      'RELEASE SAVEPOINT nest_workflows_probe',
      'SAVEPOINT nest_workflows_probe',
      'RELEASE SAVEPOINT nest_workflows_probe',
    ],
  },
];

describe.skipIf(!available)(
  "ctx.transaction() with an ORM's handle on MariaDB, rolled back by the server under the callback",
  () => {
    const schema = freshPrefix('tx_orm_rolled_back');
    const orders = `${schema}_orders`;
    let pool: mysql.Pool;

    beforeAll(async () => {
      pool = createMysqlPool({ connectionLimit: 2 });
      plan.others = createMysqlPool({ connectionLimit: 2 });
      await new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }).init();
      await pool.query(`CREATE TABLE ${orders} (id varchar(255) PRIMARY KEY) ENGINE=InnoDB`);
      plan.tables = await createDeadlockTables(pool, schema);
    });

    afterAll(async () => {
      if (pool) await dropTables(pool, schema);
      await pool?.end();
      await plan.others?.end();
    });

    const rows = async (order: string) =>
      (
        await pool.query<mysql.RowDataPacket[]>(`SELECT id FROM ${orders} WHERE id LIKE ? ORDER BY id`, [`${order}/%`])
      )[0].map((row) => String(row.id).slice(order.length + 1));

    for (const maker of kitMakers('mysql').filter((each) => !each.driver)) {
      for (const server of SERVERS) {
        it(`${maker.name}, ${server.name}: the step's result is not recorded after a deadlock the callback swallowed; the attempt fails and runs again`, async () => {
          const kit = await maker.open(orders);
          plan.kit = kit;
          const sent: string[] = [];
          const transactions = recording(kit.transactions() as OrmTransactions, sent);
          const store = new MySqlWorkflowStore({ executor: server.executor(pool), schema, transactions });
          const app = await createTestApp([SwallowedDeadlockWorkflow], { store: store as never });
          try {
            const order = `${maker.name}-${server.name === 'MariaDB' ? 'mariadb' : 'common'}`;
            const handle = await app.client.start(SwallowedDeadlockWorkflow, { order }, { id: order });
            await app.worker.drain();
            app.clock.advance('1s');
            await app.worker.drain();
            expect(isTransactionConflict(plan.caught.get(order))).toBe(true);
            // Without the refusal: `before-1` rolled back by the deadlock, `after-1` and the step's result committed alone (call 1).
            expect(await handle.result()).toEqual({ order, call: 2, attempt: 2 });
            // `after-1` committed on its own: a statement of the callback after the error it swallowed.
            expect(await rows(order)).toEqual(['after-1', 'after-2', 'before-2']);
            const retrying = app.events.find(
              (event) => event.type === 'step-retrying' && 'id' in event && event.id === order,
            );
            expect(retrying).toMatchObject({
              attempt: 1,
              error: { message: expect.stringMatching(/no longer in a transaction.*not recorded/s) },
            });
            // MariaDB: no statement more than before, the lock of the instance row reads the session's state.
            expect(sent.filter((sql) => /SAVEPOINT|@@in_transaction/.test(sql))).toEqual(server.asks);
          } finally {
            await app.close();
            await kit.close();
          }
        });
      }
    }
  },
);
