// A compensation's timeout on PostgreSQL, for ctx.transaction(): `compensateTimeout` (default the
// transaction's `timeout`) bounds each attempt of its undo, whose timed-out attempts are journaled
// in the store and retried under `compensateRetry`, and whose signal lets the undo stop its query.
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NonRetryableError, Workflow, type WorkflowContext } from '../../src/index.js';
import { createTestApp, type TestApp } from '../support/nest-test-app.js';
import { requirePostgres, usePostgresStore } from '../support/postgres.js';

const available = await requirePostgres('compensateTimeout on PostgreSQL');

const plan = { table: '', pool: null as pg.Pool | null, undo: [] as { attempt: number; outcome: string }[] };

@Injectable()
@Workflow('tx.compensate-timeout', { retry: false })
class Reservation {
  async run(ctx: WorkflowContext, input: { order: string }) {
    await ctx.transaction(
      'reserve',
      async (tx: pg.PoolClient) => void (await tx.query(`INSERT INTO ${plan.table} (id) VALUES ($1)`, [input.order])),
      {
        timeout: '5s',
        compensateTimeout: '300ms',
        compensateRetry: { attempts: 2, backoff: '1s' },
        compensate: async (_result, { attempt, signal }) => {
          const client = await plan.pool!.connect();
          // The undo stops its own query when its attempt times out (a well-behaved one does).
          const cancel = () =>
            void plan.pool!.query('SELECT pg_cancel_backend($1)', [
              (client as unknown as { processID: number }).processID,
            ]);
          signal.addEventListener('abort', cancel, { once: true });
          try {
            // The first attempt hangs (a lock wait, a server that never answers).
            if (attempt === 1) await client.query('SELECT pg_sleep(30)');
            await client.query(`DELETE FROM ${plan.table} WHERE id = $1`, [input.order]);
            plan.undo.push({ attempt, outcome: 'deleted' });
          } catch (error) {
            plan.undo.push({ attempt, outcome: (error as Error).message });
            throw error;
          } finally {
            signal.removeEventListener('abort', cancel);
            client.release();
          }
        },
      },
    );
    await ctx.step('pay', () => {
      throw new NonRetryableError('card declined');
    });
  }
}

describe.skipIf(!available)('compensateTimeout on PostgreSQL', () => {
  const fixture = usePostgresStore('tx_undo_timeout', { beforeAll, afterAll });
  let app: TestApp | undefined;

  beforeAll(async () => {
    plan.table = `"${fixture.schema}".reservations`;
    plan.pool = fixture.pool;
    await fixture.pool.query(`CREATE TABLE ${plan.table} (id text NOT NULL)`);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('fails an attempt of the undo that outlives compensateTimeout, aborts its signal, journals it, and the retry undoes the step', async () => {
    app = await createTestApp([Reservation], { store: fixture.store as never });
    const handle = await app.client.start(Reservation, { order: 'r-1' }, { id: 'r-1' });
    const began = Date.now();
    await app.worker.drain();
    expect(Date.now() - began).toBeLessThan(10_000);
    const mid = await fixture.store.get('r-1', { journal: true });
    expect(mid!.status).toBe('compensating');
    expect(mid!.journal!.find((e) => e.name === '$compensate:reserve')).toMatchObject({
      kind: 'compensation',
      state: 'waiting',
      attempts: 1,
      error: {
        name: 'WorkflowTimeoutError',
        message: expect.stringContaining(
          'Compensation of step "reserve" of instance "r-1" did not finish within 300 ms',
        ),
      },
    });
    app.clock.advance('1s');
    await app.worker.drain();
    const status = await handle.status();
    expect(status.status).toBe('failed');
    expect(status.error).toMatchObject({ name: 'NonRetryableError', message: 'card declined' });
    expect((await fixture.pool.query(`SELECT id FROM ${plan.table} WHERE id = 'r-1'`)).rows).toEqual([]);
    // Attempt 1 learns of its cancelled query in its own time, perhaps after attempt 2 ran.
    await vi.waitFor(() => expect(plan.undo).toHaveLength(2));
    expect([...plan.undo].sort((a, b) => a.attempt - b.attempt)).toEqual([
      { attempt: 1, outcome: 'canceling statement due to user request' },
      { attempt: 2, outcome: 'deleted' },
    ]);
  });
});
