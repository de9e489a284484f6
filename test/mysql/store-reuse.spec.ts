// One MySqlWorkflowStore instance across application restarts (a Nest app closed and created again
// with the same store, as tests do): close() stops the wake-up poll, and the next application's
// listen() starts a new one, as PostgresWorkflowStore's close() and listen() do with its LISTEN
// connection. Work started by another process wakes the second application's worker through it.
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workflow, systemClock, type WorkflowContext } from '../../src/index.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { createTestApp } from '../support/nest-test-app.js';
import { useMysqlStore, requireMysql } from '../support/mysql.js';

const available = await requireMysql('MySqlWorkflowStore close and reuse');

@Injectable()
@Workflow('reuse.hello')
class HelloWorkflow {
  async run(_ctx: WorkflowContext, input: { name: string }) {
    return `hello ${input.name}`;
  }
}

describe.skipIf(!available)('MySqlWorkflowStore: closed, then used again', () => {
  const fixture = useMysqlStore('reuse', { beforeAll, afterAll }, 4);
  let elsewhere: Awaited<ReturnType<typeof createTestApp>>;

  beforeAll(async () => {
    // Another process: its own store instance on the same tables, no worker.
    elsewhere = await createTestApp([HelloWorkflow], {
      store: new MySqlWorkflowStore({ executor: fromMysql2(fixture.pool), schema: fixture.schema }) as never,
      clock: systemClock,
      worker: false,
    });
  });

  afterAll(async () => {
    await elsewhere?.close();
  });

  it('close() stops the wake-up poll; listen() afterwards starts a new one that hears new work', async () => {
    const { store } = fixture;
    let heard = 0;
    await store.listen(() => heard++);
    await store.close();
    await elsewhere.client.start(HelloWorkflow, { name: 'unheard' }, { id: 'reuse-unheard' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(heard).toBe(0);

    let heardAgain = 0;
    const stop = await store.listen(() => heardAgain++);
    await elsewhere.client.start(HelloWorkflow, { name: 'heard' }, { id: 'reuse-heard' });
    for (let i = 0; heardAgain === 0 && i < 100; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await stop();
    expect(heardAgain).toBeGreaterThan(0);
    expect(heard).toBe(0);
  });

  it('an application restarted with the same store instance runs work started elsewhere at once', async () => {
    // The workers poll once an hour: only the store's wake-up poll can make them look.
    for (const round of ['first', 'second', 'third']) {
      const app = await createTestApp([HelloWorkflow], {
        store: fixture.store as never,
        clock: systemClock,
        worker: { concurrency: 1, pollInterval: '1h' },
      });
      try {
        // Let the worker's first claim (at startup) pass, so only a wake-up can run what comes next.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const handle = await elsewhere.client.start(HelloWorkflow, { name: round }, { id: `reuse-${round}` });
        expect(await handle.result({ timeout: 3_000 })).toBe(`hello ${round}`);
      } finally {
        await app.close();
      }
    }
  });
});
