// A cancel or terminate requested in one app (an API or dashboard process, no worker) reaches the
// execution running in another app (the worker) through the store's notification, not at the
// worker's next heartbeat: the heartbeat is 30 s here, and the running step must see its signal
// abort, and the instance end, within a few seconds. Two Nest apps in this test process, each with
// its own pool, as two processes would have.
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { WorkflowClient } from '../../src/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { postgresAppModule } from '../support/postgres-apps.js';
import { cases, Effects, expectStoppedSoon, HoldThenCharge, startHolding } from './remote-cancel-scenario.js';

const available = await requirePostgres('cancel across processes e2e');
const schema = freshSchemaName('remotecancel');

function appModule(worker: boolean) {
  return postgresAppModule(
    schema,
    { enabled: worker, leaseDuration: '90s', heartbeatInterval: '30s', shutdownTimeout: '1s' },
    [Effects, HoldThenCharge],
  );
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

  for (const request of cases) {
    it(`stops the running step at once (not at the worker's next heartbeat) on a ${request.request} from another process`, async () => {
      const client = api.get(WorkflowClient);
      const id = `hold-${request.request}`;
      await startHolding(client, id);
      await expectStoppedSoon(client, id, request);
    }, 20_000);
  }
});
