// ctx.transaction() on MariaDB when InnoDB rolls the whole transaction back under the callback (a
// real deadlock with another connection) and the callback catches the error and goes on: the
// session is out of the transaction then, so without the store's refusal the callback's later
// statements and the step's recorded result would each commit on their own.
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, type WorkflowContext } from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { createMysqlPool, requireMysql, useMysqlStore } from '../support/mysql.js';
import { createDeadlockTables, deadlock, type DeadlockTables } from '../support/mysql-deadlock.js';

const available = await requireMysql('ctx.transaction() rolled back by the server on MariaDB');

/** What the workflow below does and saw, per order. */
const plan = {
  orders: '',
  tables: undefined as DeadlockTables | undefined,
  /** The application's other connections: the other side of the deadlock. */
  others: undefined as mysql.Pool | undefined,
  calls: new Map<string, number>(),
  /** The error the first call caught (and swallowed). */
  caught: new Map<string, unknown>(),
  /** What the callback's statements after it were told. */
  refusals: new Map<string, string>(),
};

@Injectable()
@Workflow('tx.swallowed-deadlock')
class SwallowedDeadlockWorkflow {
  async run(ctx: WorkflowContext, input: { order: string; then: 'insert' | 'return' | 'queued'; timeout?: string }) {
    return ctx.transaction(
      'save-order',
      async (tx: mysql.PoolConnection, { attempt }) => {
        const call = (plan.calls.get(input.order) ?? 0) + 1;
        plan.calls.set(input.order, call);
        await tx.query(`INSERT INTO ${plan.orders} (id, row_name) VALUES (?, ?)`, [input.order, `before-${call}`]);
        const after = () =>
          tx
            .query(`INSERT INTO ${plan.orders} (id, row_name) VALUES (?, ?)`, [input.order, `after-${call}`])
            .catch((error: Error) => {
              plan.refusals.set(input.order, error.message);
              throw error;
            });
        // The first call catches the deadlock and goes on as if nothing happened ('queued': with
        // its next statement sent while the deadlocked one runs, and its failure caught too).
        if (call === 1) {
          const alongside = input.then === 'queued' ? () => after().catch(() => undefined) : undefined;
          plan.caught.set(input.order, await deadlock(plan.others!, plan.tables!, (sql) => tx.query(sql), alongside));
        }
        if (input.then === 'insert' || (input.then === 'queued' && call > 1)) await after();
        return { order: input.order, call, attempt };
      },
      { retry: { attempts: 1 }, ...(input.timeout ? { timeout: input.timeout } : {}) },
    );
  }
}

describe.skipIf(!available)('ctx.transaction() on MariaDB, rolled back by the server under the callback', () => {
  // One connection: what a step leaves on its session is what the next one (and the checks) see.
  const fixture = useMysqlStore('tx_rolled_back', { beforeAll, afterAll }, 1);
  let app: TestApp | undefined;

  beforeAll(async () => {
    plan.others = createMysqlPool({ connectionLimit: 2 });
    plan.orders = `${fixture.schema}_orders`;
    await fixture.pool.query(
      `CREATE TABLE ${plan.orders} (id varchar(255) NOT NULL, row_name varchar(64) NOT NULL) ENGINE=InnoDB`,
    );
    plan.tables = await createDeadlockTables(fixture.pool, fixture.schema);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  afterAll(async () => {
    await plan.others?.end();
  });

  const rows = async (order: string) =>
    (
      await fixture.pool.query<mysql.RowDataPacket[]>(
        `SELECT row_name FROM ${plan.orders} WHERE id = ? ORDER BY row_name`,
        [order],
      )
    )[0].map((row) => String(row.row_name));
  const run = async (order: string, input: { then: 'insert' | 'return' | 'queued'; timeout?: string }) => {
    app = await createTestApp([SwallowedDeadlockWorkflow], { store: fixture.store as never });
    const handle = await app.client.start(SwallowedDeadlockWorkflow, { order, ...input }, { id: order });
    await app.worker.drain();
    return handle;
  };

  it("refuses the callback's statements after the deadlock it swallowed: nothing of that run commits, and the transaction runs again", async () => {
    const handle = await run('d-insert', { then: 'insert' });
    expect(plan.caught.get('d-insert')).toMatchObject({ errno: 1213 });
    // Without the refusal: `before-1` rolled back by the deadlock, `after-1` and the step's result committed alone.
    expect(await rows('d-insert')).toEqual(['after-2', 'before-2']);
    expect(plan.refusals.get('d-insert')).toMatch(
      /rolled this transaction back .*Deadlock.*refused.*let the error propagate/is,
    );
    expect(await handle.result()).toEqual({ order: 'd-insert', call: 2, attempt: 1 });
    const entry = (await fixture.store.get('d-insert', { journal: true }))!.journal!.find(
      (e) => e.name === 'save-order',
    );
    expect(entry).toMatchObject({ state: 'completed', attempts: 1 });
  });

  it('refuses a statement the callback sent while the deadlocked one ran, queued behind it on the connection', async () => {
    const handle = await run('d-queued', { then: 'queued' });
    expect(plan.caught.get('d-queued')).toMatchObject({ errno: 1213 });
    // Without one statement at a time: mysql2 sends `after-1` as soon as the deadlock answered, and it commits alone.
    expect(await rows('d-queued')).toEqual(['after-2', 'before-2']);
    expect(plan.refusals.get('d-queued')).toMatch(/rolled this transaction back/);
    expect(await handle.result()).toEqual({ order: 'd-queued', call: 2, attempt: 1 });
  });

  it("refuses the step's own write after a callback that swallowed the deadlock and returned, and gives the session back as it was", async () => {
    const handle = await run('d-return', { then: 'return', timeout: '20s' });
    expect(plan.caught.get('d-return')).toMatchObject({ errno: 1213 });
    // Without the refusal: the step's result committed alone, with none of its rows.
    expect(await rows('d-return')).toEqual(['before-2']);
    expect(await handle.result()).toEqual({ order: 'd-return', call: 2, attempt: 1 });
    // The step's statement limit was set back on the session even in the rolled-back run.
    const [[session]] = await fixture.pool.query<mysql.RowDataPacket[]>(
      'SELECT @@SESSION.max_statement_time = @@GLOBAL.max_statement_time AS reset, @@in_transaction AS open',
    );
    expect({ reset: Number(session!.reset), open: Number(session!.open) }).toEqual({ reset: 1, open: 0 });
  });
});
