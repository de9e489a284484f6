// A Nest app wired as docs/postgres.md shows, for the e2e tests that run two of them in one test
// process as two processes would (an API app with no worker, a worker app): a module provides the
// application's pg Pool and ends it when the app shuts down, and `forRootAsync` builds the store
// on that pool.
import { Module, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import pg from 'pg';
import { WorkflowsModule, type WorkflowsModuleOptions } from '../../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { pgConnection } from './postgres.js';

/** The app's module: its own pool (3 connections) on `schema`, `worker` as the worker's options, `providers` beside. */
export function postgresAppModule(schema: string, worker: WorkflowsModuleOptions['worker'], providers: Provider[]) {
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

  @Module({
    imports: [
      DatabaseModule,
      WorkflowsModule.forRootAsync({
        imports: [DatabaseModule],
        inject: [pg.Pool],
        useFactory: (pool: pg.Pool) => ({
          store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }),
          worker,
        }),
      }),
    ],
    providers,
  })
  class AppModule {}
  return AppModule;
}
