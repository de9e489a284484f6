// A pause requested in one app (no worker) stops the execution running in another app (the worker)
// on MariaDB, which has no LISTEN/NOTIFY: through the wake-up poll's cancel counter, within a
// second, not at the worker's next heartbeat (30 s here); resumed, it carries on where it stopped.
// Two Nest apps in this test process, each with its own pool, on one table prefix.
import { Inject, Module, type INestApplicationContext, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { createMysqlPool, dropTables, freshPrefix, mysqlConnection, requireMysql } from '../support/mysql.js';
import { pauseAndResumeRemotely, TickTock, Ticks } from './remote-pause-scenario.js';

const available = await requireMysql('pause across processes e2e');
const schema = freshPrefix('remotepause');

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

function appModule(enabled: boolean) {
  @Module({
    imports: [
      DatabaseModule,
      WorkflowsModule.forRootAsync({
        imports: [DatabaseModule],
        inject: ['POOL'],
        useFactory: (pool: mysql.Pool) => ({
          store: new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }),
          worker: { enabled, leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' },
        }),
      }),
    ],
    providers: [Ticks, TickTock],
  })
  class AppModule {}
  return AppModule;
}

describe.skipIf(!available)('a pause from another process on MariaDB', () => {
  let api: INestApplicationContext;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    api = await NestFactory.createApplicationContext(appModule(false), { logger: false });
    worker = await NestFactory.createApplicationContext(appModule(true), { logger: false });
  });

  afterAll(async () => {
    await api?.close();
    await worker?.close();
    const pool = createMysqlPool({ connectionLimit: 1 });
    await dropTables(pool, schema);
    await pool.end();
  });

  it('stops the running execution within a second and resumes it where it stopped, no recorded step run twice', async () => {
    await pauseAndResumeRemotely(api.get(WorkflowClient), 'ticks-mariadb');
  }, 30_000);
});
