// Handles across processes on PostgreSQL, in apps wired as docs/postgres.md shows (a module that
// provides the pg Pool and ends it at shutdown, imported into forRootAsync): a handle.result() in
// one app is woken by the store's LISTEN/NOTIFY when another app ends the instance, not by polling
// (both poll once an hour here); a result() still waiting when its app closes rejects; closing
// apps wired this way ends their pools without hanging.
import { Injectable } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Workflow,
  WorkflowClient,
  WorkflowClientClosedError,
  WorkflowSignal,
  type WorkflowContext,
} from '../../src/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';
import { postgresAppModule } from '../support/postgres-apps.js';

const available = await requirePostgres('handles across processes e2e');
const schema = freshSchemaName('handles');
const go = new WorkflowSignal<{ n: number }>('handles.go');

@Injectable()
class Doubler {
  double(n: number): number {
    return n * 2;
  }
}

@Workflow('handles.double')
class DoubleIt {
  constructor(private readonly doubler: Doubler) {}

  async run(ctx: WorkflowContext, input: { key: string }) {
    const { n } = await ctx.waitForSignal('go', go, { key: input.key });
    return ctx.step('double', () => this.doubler.double(n));
  }
}

function appModule(worker: boolean) {
  return postgresAppModule(schema, { enabled: worker, pollInterval: '1h' }, [Doubler, DoubleIt]);
}

describe.skipIf(!available)('handles across processes on PostgreSQL', () => {
  let api: INestApplicationContext;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    // The API process runs no worker; the worker process runs every instance.
    api = await NestFactory.createApplicationContext(appModule(false), { logger: false });
    worker = await NestFactory.createApplicationContext(appModule(true), { logger: false });
  });

  afterAll(async () => {
    // Each app is closed once (its DatabaseModule ends its pool, which pg allows once).
    if (api && !api.get(pg.Pool).ended) await api.close();
    if (worker && !worker.get(pg.Pool).ended) await worker.close();
    const pool = createPool({ max: 1 });
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('wakes result() in one app when the instance ends in another, through LISTEN/NOTIFY', async () => {
    const client = api.get(WorkflowClient);
    const handle = await client.start(DoubleIt, { key: 'a' }, { id: 'double-a' });
    const result = handle.result();
    // Wait until the worker app has it suspended in its wait, then send the signal from the API.
    for (let i = 0; (await handle.status()).status !== 'suspended'; i++) {
      if (i > 200) throw new Error('the worker app never ran the instance: it was not woken by NOTIFY');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await client.signal(go, { n: 21 }, { key: 'a' });
    // Polling once an hour: only the notification of its end can resolve this within the test's time.
    await expect(result).resolves.toBe(42);
  }, 20_000);

  it('rejects a result() still waiting when its app closes, and ends the pools it was given', async () => {
    const client = api.get(WorkflowClient);
    const handle = await client.start(DoubleIt, { key: 'never' }, { id: 'double-never' });
    const waiting = handle.result().catch((error: unknown) => error);
    const pool = api.get(pg.Pool);
    await api.close();
    expect(await waiting).toBeInstanceOf(WorkflowClientClosedError);
    expect(pool.ended).toBe(true);
    await worker.close();
    expect(worker.get(pg.Pool).ended).toBe(true);
  }, 20_000);
});
