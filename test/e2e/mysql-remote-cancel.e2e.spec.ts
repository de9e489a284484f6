// A cancel or terminate requested in one app (an API or dashboard process, no worker) reaches the
// execution running in another app (the worker) on MySQL/MariaDB, which has no LISTEN/NOTIFY,
// while every slot of the worker is taken: the worker claims on its own and its wake-up poll rests,
// reading only the cancel counter. The heartbeat is 30 s here, and the running step must see its
// signal abort, and the instance end, within a few seconds. Two Nest apps in this test process,
// each with its own pool, on one table prefix, because the test watches the worker's `listen()`
// options to see its poll rest. (With free slots, across real OS processes: remote-control.e2e.spec.ts,
// on the same scenario.)
import { Inject, Module, type INestApplicationContext, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import type { WorkflowListenOptions, WorkflowWakeUpKind } from '../../src/storage/workflow-store.js';
import { RESTING_CANCEL_POLL } from '../../src/mysql/mysql-cancel-notices.js';
import { createMysqlPool, dropTables, freshPrefix, mysqlConnection, requireMysql } from '../support/mysql.js';
import {
  cancelCases,
  EFFECTS,
  expectStoppedSoon,
  HoldThenCharge,
  memoryEffects,
  startHolding,
  Ticks,
  WORKER_OPTIONS,
} from './remote-control-scenario.js';

const available = await requireMysql('cancel across processes e2e');
const schema = freshPrefix('remotecancel');

@Module({
  providers: [{ provide: 'POOL', useFactory: () => mysql.createPool({ ...mysqlConnection, connectionLimit: 3 }) }],
  exports: ['POOL'],
})
class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject('POOL') readonly pool: mysql.Pool) {}

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

/** The steps' effects, in this one process. */
const recorded = memoryEffects();

/** What the worker's runtime told its store's `listen()`: whether it needs wake-ups now (its poll rests while not). */
let listening: WorkflowListenOptions | undefined;

/** The store, keeping the `listen()` options the worker passes, so a test can see its poll rest. */
class ObservedStore extends MySqlWorkflowStore {
  override listen(listener: (id?: string, kind?: WorkflowWakeUpKind) => void, options?: WorkflowListenOptions) {
    listening = options;
    return super.listen(listener, options);
  }
}

function appModule(worker: { enabled: boolean; concurrency?: number }) {
  @Module({
    imports: [
      DatabaseModule,
      WorkflowsModule.forRootAsync({
        imports: [DatabaseModule],
        inject: ['POOL'],
        useFactory: (pool: mysql.Pool) => ({
          store: new ObservedStore({ executor: fromMysql2(pool), schema }),
          worker: { ...worker, ...WORKER_OPTIONS },
        }),
      }),
    ],
    providers: [{ provide: EFFECTS, useValue: recorded.effects }, Ticks, HoldThenCharge],
  })
  class AppModule {}
  return AppModule;
}

const workers = [
  // A claim that fills every slot it asked for leaves a backlog: the worker claims on its own as
  // slots free, and its wake-up poll rests meanwhile (`needsWakeUps()` is false).
  { slots: 'with every slot taken (the wake-up poll rests)', concurrency: 1, resting: true },
];

describe.skipIf(!available)('a cancel or terminate from another process on MariaDB', () => {
  let api: INestApplicationContext;

  beforeAll(async () => {
    // The API process runs no worker (and migrates the tables); the worker processes run the instances.
    api = await NestFactory.createApplicationContext(appModule({ enabled: false }), { logger: false });
  });

  afterAll(async () => {
    await api?.close();
    const pool = createMysqlPool({ connectionLimit: 1 });
    await dropTables(pool, schema);
    await pool.end();
  });

  for (const { slots, concurrency, resting } of workers) {
    describe(slots, () => {
      let worker: INestApplicationContext;

      beforeAll(async () => {
        worker = await NestFactory.createApplicationContext(appModule({ enabled: true, concurrency }), {
          logger: false,
        });
      });

      afterAll(async () => {
        await worker?.close();
      });

      for (const request of cancelCases) {
        it(`stops the running step at once (not at the worker's next heartbeat) on a ${request.request} from another process`, async () => {
          const client = api.get(WorkflowClient);
          const id = `hold-${request.request}-${concurrency}`;
          await startHolding(client, id, recorded.read);
          // The poll rests exactly when the worker needs no wake-ups (it claims on its own).
          expect(listening?.needsWakeUps?.()).toBe(!resting);
          if (resting) await new Promise((resolve) => setTimeout(resolve, 2 * RESTING_CANCEL_POLL)); // past any read that began before the rest
          expect(listening?.needsWakeUps?.()).toBe(!resting);
          await expectStoppedSoon(client, id, request, recorded.read);
        }, 20_000);
      }
    });
  }
});
