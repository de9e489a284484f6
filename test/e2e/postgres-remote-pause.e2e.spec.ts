// A pause requested in one app (an API or dashboard process, no worker) stops the execution
// running in another app (the worker) through the store's notification, within a second, not at
// the worker's next heartbeat (30 s here); resumed, it carries on where it stopped. Two Nest apps
// in this test process, each with its own pool, as two processes would have.
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { WorkflowClient } from '../../src/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { postgresAppModule } from '../support/postgres-apps.js';
import { pauseAndResumeRemotely, TickTock, Ticks } from './remote-pause-scenario.js';

const available = await requirePostgres('pause across processes e2e');
const schema = freshSchemaName('remotepause');

function appModule(worker: boolean) {
  return postgresAppModule(
    schema,
    { enabled: worker, leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' },
    [Ticks, TickTock],
  );
}

describe.skipIf(!available)('a pause from another process on PostgreSQL', () => {
  let api: INestApplicationContext;
  let worker: INestApplicationContext;

  beforeAll(async () => {
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

  it('stops the running execution within a second and resumes it where it stopped, no recorded step run twice', async () => {
    await pauseAndResumeRemotely(api.get(WorkflowClient), 'ticks-pg');
  }, 30_000);
});
