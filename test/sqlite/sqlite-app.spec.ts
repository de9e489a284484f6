// A Nest application on the SQLite store, as a user runs it: a workflow with a step, a durable
// sleep, a signal and a child; ctx.transaction() on the store's own database (the callback's rows
// and the step's result commit together, or neither does); start() and signal() inside the
// application's transaction; payloads through a codec; a declared schedule; and an application
// closed and started again on the same file carrying on.
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AesGcmPayloadCodec,
  Workflow,
  WorkflowClient,
  WorkflowSignal,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowContext,
} from '../../src/index.js';
import { SqliteWorkflowStore } from '../../src/sqlite/index.js';
import { ManualWorkflowClock } from '../../src/testing/index.js';

const approved = new WorkflowSignal<{ by: string }>('order.approved');

/** What the callbacks do, set per test. */
const plan = { failFirstAttempt: false, calls: 0 };

@Injectable()
@Workflow('sqlite.child')
class Child {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('double', () => input.n * 2);
  }
}

@Injectable()
@Workflow('sqlite.order')
class Order {
  async run(ctx: WorkflowContext, input: { order: string; amount: number }) {
    const saved = await ctx.transaction(
      'save',
      (tx: Database.Database, { attempt }) => {
        plan.calls += 1;
        tx.prepare('INSERT INTO orders (id, attempt) VALUES (?, ?)').run(input.order, attempt);
        if (plan.failFirstAttempt && attempt === 1) throw new Error('the warehouse is closed');
        return { attempt };
      },
      { retry: { attempts: 2, backoff: '1s' } },
    );
    await ctx.sleep('cool-off', '10m');
    const approval = await ctx.waitForSignal('approval', approved, { key: input.order });
    const doubled = await ctx.executeChild('child', Child, { n: input.amount });
    return { saved, by: approval.by, doubled };
  }
}

@Injectable()
@Workflow('sqlite.tick', { schedules: [{ every: '1m' }] })
class Tick {
  async run(ctx: WorkflowContext) {
    return ctx.step('tick', () => 'tock');
  }
}

describe('a Nest application on SqliteWorkflowStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nest-workflows-sqlite-app-'));
  const path = join(dir, 'app.db');
  const key = randomBytes(32);
  let db: Database.Database;
  const apps: Array<{ close(): Promise<void> }> = [];

  beforeAll(() => {
    db = new Database(path);
    db.exec('CREATE TABLE orders (id TEXT NOT NULL, attempt INTEGER NOT NULL)');
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    plan.failFirstAttempt = false;
    plan.calls = 0;
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z')), file = path) {
    const store = new SqliteWorkflowStore({ path: file });
    const module = await Test.createTestingModule({
      imports: [
        WorkflowsModule.forRoot({ store, clock, worker: false, codec: new AesGcmPayloadCodec({ key, id: 'k1' }) }),
      ],
      providers: [Order, Child, Tick],
    }).compile();
    await module.init();
    apps.push(module);
    return { client: module.get(WorkflowClient), worker: module.get(WorkflowWorker), clock, store, module };
  }

  it('runs a workflow to its end, its transaction committed once with the step, across an application restart', async () => {
    const first = await start();
    const handle = await first.client.start(Order, { order: 'o-1', amount: 21 }, { id: 'order-o-1' });
    await first.worker.drain();
    expect((await handle.status()).status).toBe('suspended');
    expect(db.prepare("SELECT attempt FROM orders WHERE id = 'o-1'").all()).toEqual([{ attempt: 1 }]);
    // The input is stored encrypted: the file holds no plaintext of it.
    const raw = db.prepare("SELECT input FROM nest_workflows_instances WHERE id = 'order-o-1'").get() as {
      input: string;
    };
    expect(raw.input).not.toContain('o-1');

    // The process stops; another starts on the same file and carries on from the journal.
    await first.module.close();
    apps.pop();
    const clock = new ManualWorkflowClock(first.clock.now());
    const second = await start(clock);
    clock.advance('10m');
    await second.worker.drain();
    expect((await second.client.getStatus('order-o-1')).status).toBe('suspended');
    await second.client.signal(approved, { by: 'ada' }, { key: 'o-1' });
    await second.worker.drain();
    const done = await second.client.getStatus('order-o-1', { journal: true });
    expect(done.status).toBe('completed');
    expect(done.output).toEqual({ saved: { attempt: 1 }, by: 'ada', doubled: 42 });
    expect(done.journal!.filter((entry) => entry.name === 'save')).toHaveLength(1);
    expect(db.prepare("SELECT COUNT(*) AS n FROM orders WHERE id = 'o-1'").get()).toEqual({ n: 1 });
    expect(plan.calls).toBe(1);
  });

  it('rolls a failed transaction back with its rows, and commits the retry', async () => {
    plan.failFirstAttempt = true;
    const { client, worker, clock } = await start();
    await client.start(Order, { order: 'o-2', amount: 1 }, { id: 'order-o-2' });
    await worker.drain();
    expect(db.prepare("SELECT attempt FROM orders WHERE id = 'o-2'").all()).toEqual([]);
    clock.advance('1s');
    await worker.drain();
    expect(db.prepare("SELECT attempt FROM orders WHERE id = 'o-2'").all()).toEqual([{ attempt: 2 }]);
    const status = await client.getStatus('order-o-2', { journal: true });
    expect(status.journal!.find((entry) => entry.name === 'save')).toMatchObject({
      state: 'completed',
      value: { attempt: 2 },
    });
  });

  it("starts and signals inside the application's transaction: rolled back, nothing is stored; committed, both are", async () => {
    const { client, worker, clock } = await start();
    const appDb = new Database(path);
    try {
      appDb.exec('BEGIN IMMEDIATE');
      await client.start(Order, { order: 'o-3', amount: 2 }, { id: 'order-o-3', transaction: appDb });
      appDb.exec('ROLLBACK');
      await expect(client.getStatus('order-o-3')).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });

      appDb.exec('BEGIN IMMEDIATE');
      appDb.prepare("INSERT INTO orders (id, attempt) VALUES ('o-3-app', 0)").run();
      await client.start(Order, { order: 'o-3', amount: 2 }, { id: 'order-o-3', transaction: appDb });
      appDb.exec('COMMIT');
      await worker.drain();
      clock.advance('10m');
      await worker.drain();

      appDb.exec('BEGIN IMMEDIATE');
      const sent = await client.signal(approved, { by: 'grace' }, { key: 'o-3', transaction: appDb });
      appDb.exec('COMMIT');
      expect(sent).toMatchObject({ created: true, woken: 1 });
      await worker.drain();
      expect((await client.getStatus('order-o-3')).output).toMatchObject({ by: 'grace', doubled: 4 });
    } finally {
      appDb.close();
    }
  });

  it('refuses a transaction handle with no transaction open, storing nothing', async () => {
    const { client } = await start();
    const appDb = new Database(path);
    try {
      await expect(
        client.start(Order, { order: 'o-4', amount: 1 }, { id: 'order-o-4', transaction: appDb }),
      ).rejects.toThrow(/found no transaction open on that database/);
      await expect(client.getStatus('order-o-4')).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });
    } finally {
      appDb.close();
    }
  });

  it('starts the occurrences of a declared schedule', async () => {
    // A file of its own: the other tests' applications declared the schedule too, at their times.
    const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:30Z'));
    const { client, worker } = await start(clock, join(dir, 'schedules.db'));
    await worker.drain();
    clock.advance('1m');
    await worker.drain();
    const runs = await client.list({ scheduleId: 'sqlite.tick', limit: 10, offset: 0 });
    expect(runs.map((run) => [run.id, run.status])).toContainEqual([
      'sqlite.tick@2026-01-01T00:01:00.000Z',
      'completed',
    ]);
  });
});
