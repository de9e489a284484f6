// A cancel or terminate requested in one app (an API or dashboard process, no worker) reaches the
// execution running in another app (the worker) through the store's notification, not at the
// worker's next heartbeat: the heartbeat is 30 s here, and the running step must see its signal
// abort, and the instance end, within a few seconds. Two Nest apps in this test process, each with
// its own pool, as two processes would have.
import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, WorkflowClient, WorkflowsModule, type WorkflowContext } from '../../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, pgConnection, requirePostgres } from '../support/postgres.js';

const available = await requirePostgres('cancel across processes e2e');
const schema = freshSchemaName('remotecancel');

/** Far below the worker's heartbeat (30 s): only the notification can stop the step this soon. */
const BOUND = 3_000;

/** What each instance's steps did (by id), and when its running step saw its signal abort. */
const did = new Map<string, string[]>();
const record = (id: string, what: string) => void did.set(id, [...(did.get(id) ?? []), what]);
const holding = new Map<string, () => void>();
const abortedAt = new Map<string, number>();

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

@Injectable()
class Effects {
  /** A long side effect that stops when its signal aborts (a cancel, a terminate). */
  hold(id: string, signal: AbortSignal): Promise<string> {
    record(id, 'hold');
    holding.get(id)?.();
    return new Promise((resolve) => {
      signal.addEventListener(
        'abort',
        () => {
          abortedAt.set(id, Date.now());
          resolve('stopped');
        },
        { once: true },
      );
    });
  }
}

@Workflow('remote-cancel.hold')
class HoldThenCharge {
  constructor(private readonly effects: Effects) {}

  async run(ctx: WorkflowContext) {
    await ctx.step('hold', ({ signal }) => this.effects.hold(ctx.id, signal), { compensate: () => record(ctx.id, 'undo hold') });
    await ctx.step('charge', () => record(ctx.id, 'charge'));
    return 'charged';
  }
}

@Module({
  providers: [{ provide: pg.Pool, useFactory: () => new pg.Pool({ ...pgConnection, max: 3 }) }],
  exports: [pg.Pool],
})
class DatabaseModule implements OnApplicationShutdown {
  constructor(readonly pool: pg.Pool) {}

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

function appModule(worker: boolean) {
  @Module({
    imports: [
      DatabaseModule,
      WorkflowsModule.forRootAsync({
        imports: [DatabaseModule],
        inject: [pg.Pool],
        useFactory: (pool: pg.Pool) => ({
          store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }),
          worker: { enabled: worker, leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' },
        }),
      }),
    ],
    providers: [Effects, HoldThenCharge],
  })
  class AppModule {}
  return AppModule;
}

describe.skipIf(!available)('a cancel or terminate from another process on PostgreSQL', () => {
  let api: INestApplicationContext;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    // The API process runs no worker; the worker process runs every instance.
    api = await NestFactory.createApplicationContext(appModule(false), { logger: false });
    worker = await NestFactory.createApplicationContext(appModule(true), { logger: false });
  });

  afterAll(async () => {
    await api?.close();
    await worker?.close();
    const pool = createPool({ max: 1 });
    await dropSchema(pool, schema);
    await pool.end();
  });

  const cases = [
    { request: 'cancel', error: 'WorkflowCancelledError', did: ['hold', 'undo hold'] },
    { request: 'terminate', error: 'WorkflowTerminatedError', did: ['hold'] },
  ] as const;

  for (const { request, error, did: expected } of cases) {
    it(`stops the running step at once (not at the worker's next heartbeat) on a ${request} from another process`, async () => {
      const client = api.get(WorkflowClient);
      const id = `hold-${request}`;
      const held = deferred();
      holding.set(id, held.resolve);
      await client.start(HoldThenCharge, null, { id });
      await held.promise;
      const requested = Date.now();
      await client[request](id, 'operator said stop');
      for (;;) {
        const status = await client.getStatus(id);
        if (status.status === 'cancelled') {
          expect(status.error).toMatchObject({ name: error, message: 'operator said stop' });
          break;
        }
        if (Date.now() - requested > BOUND) {
          throw new Error(`After ${BOUND} ms the instance is still ${status.status} (its step's signal ${abortedAt.has(id) ? 'aborted' : 'did not abort'}): the ${request} waits for the worker's heartbeat.`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(abortedAt.get(id)! - requested).toBeLessThan(BOUND);
      expect(did.get(id)).toEqual(expected);
    }, 20_000);
  }
});
