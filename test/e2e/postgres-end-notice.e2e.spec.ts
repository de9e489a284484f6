// An instance's end notifies (pg_notify on `<schema>_wake_ended`) only when a handle.result() that
// must hear of it from another process asked for it (requestEndNotice, migration 0005). Here: many
// result() calls in a second process race many ends, and each resolves by notification alone (that
// process polls once an hour); an instance started and awaited in the process that runs it ends
// without asking and without a notification; one that runs here, suspends and ends elsewhere is
// asked for when its execution here stops, and its result() is woken by the notification.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Workflow, WorkflowClient, WorkflowsModule, WorkflowSignal, type WorkflowContext } from '../../src/index.js';
import { PostgresWorkflowStore, fromPg, type PgPoolLike } from '../../src/postgres/index.js';
import { createPool, dropSchema, freshSchemaName, requirePostgres } from '../support/postgres.js';

const available = await requirePostgres('end notices e2e');
const go = new WorkflowSignal<null>('notice.go');

@Workflow('notice.quick')
class Quick {
  async run(ctx: WorkflowContext, input: number) {
    return ctx.step('double', () => input * 2);
  }
}

@Workflow('notice.waits')
class Waits {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go', go);
    return 'here';
  }
}

describe.skipIf(!available)('end notices on PostgreSQL', () => {
  const schema = freshSchemaName('notice');
  let pool: pg.Pool;
  let store: PostgresWorkflowStore;
  let listener: pg.PoolClient;
  const heard: string[] = [];
  const children: ChildProcess[] = [];

  /** A marker sent after everything before it: once heard, every earlier notification has arrived. */
  const sync = async () => {
    const marker = `marker-${randomUUID()}`;
    await pool.query('SELECT pg_notify($1, $2)', [`${schema}_wake_ended`, marker]);
    await vi.waitFor(() => expect(heard).toContain(marker));
    return heard.filter((payload) => !payload.startsWith('marker-'));
  };
  const flags = async (ids: string[]) =>
    (
      await pool.query<{ id: string; notify_end: boolean }>(
        `SELECT id, notify_end FROM "${schema}".instances WHERE id = ANY($1) ORDER BY id`,
        [ids],
      )
    ).rows;

  beforeAll(async () => {
    pool = createPool({ max: 12 });
    store = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
    await store.init();
    // A plain LISTEN on the ends' channel: it hears every end notified, whoever waits for it.
    listener = await pool.connect();
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN "${schema}_wake_ended"`);
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    listener?.release();
    await store?.close();
    if (pool) await dropSchema(pool, schema);
    await pool?.end();
  });

  function waiter(): Promise<{ child: ChildProcess; done: Map<string, string> }> {
    const child = spawn(
      process.execPath,
      ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/result-waiter.ts'],
      {
        env: { ...process.env, WF_SCHEMA: schema },
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    children.push(child);
    const done = new Map<string, string>();
    let buffered = '';
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the waiting process exited early with ${code}`)));
      child.stdout!.on('data', (data: Buffer) => {
        buffered += data.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          if (line === 'ready') resolve({ child, done });
          const [what, id, ...rest] = line.split(' ');
          if (what === 'done' || what === 'failed') done.set(id!, what === 'done' ? 'done' : rest.join(' '));
        }
      });
    });
  }

  it('resolves every result() in another process by notification, however its ask and the end interleave', async () => {
    const { child, done } = await waiter();
    const workflows = [{ name: 'notice.race', version: 1 }];
    // Warmed up first: one result() of an instance that is not there (its pool and LISTEN connection open).
    child.stdin!.write(`${JSON.stringify(['warm-up'])}\n`);
    await vi.waitFor(() => expect(done.get('warm-up')).toMatch(/WorkflowNotFoundError/));
    done.clear();
    const rounds = [
      { n: 150, spread: 50 },
      { n: 150, spread: 300 },
      { n: 150, spread: 1500 },
    ];
    const ids: string[] = [];
    for (const [round, { n, spread }] of rounds.entries()) {
      const batch = Array.from({ length: n }, (_, k) => `race-${round}-${k}`);
      ids.push(...batch);
      const now = Date.now();
      await Promise.all(
        batch.map((id) => store.create({ id, workflow: 'notice.race', version: 1, input: null, deadline: null, now })),
      );
      const token = randomUUID();
      const claim = await store.claim({ owner: 'test', token, now, leaseUntil: now + 60_000, limit: n, workflows });
      expect(claim.instances).toHaveLength(n);
      const end = (id: string) =>
        store.write(id, token, {
          now: Date.now(),
          entries: [],
          status: 'completed',
          output: id,
          release: { wakeAt: null, waits: [], signalCursor: claim.lastSignalId },
        });
      // A tenth end before any result() is asked for; the rest at random times while the other
      // process reads, asks and waits for all of them at once.
      const early = batch.filter((_, k) => k % 10 === 0);
      expect(await Promise.all(early.map(end))).toEqual(early.map(() => true));
      child.stdin!.write(`${JSON.stringify(batch)}\n`);
      const racing = batch.filter((_, k) => k % 10 !== 0);
      const landed = await Promise.all(
        racing.map(
          (id) =>
            new Promise<boolean>((resolve, reject) =>
              setTimeout(() => end(id).then(resolve, reject), Math.random() * spread),
            ),
        ),
      );
      expect(landed).toEqual(racing.map(() => true));
    }
    // Polling once an hour: only notifications resolve these within the test's time.
    await vi.waitFor(() => expect(done.size).toBe(ids.length), { timeout: 20_000, interval: 50 });
    expect([...done.entries()].filter(([, outcome]) => outcome !== 'done')).toEqual([]);
    // Both orders happened: asks before the end (flag set, notified) and ends before the ask.
    const rows = await flags(ids);
    const asked = rows.filter((row) => row.notify_end).map((row) => row.id);
    expect(asked.length).toBeGreaterThan(0);
    expect(rows.length - asked.length).toBeGreaterThan(0);
    // An end notified exactly the instances whose ask came first.
    expect((await sync()).filter((id) => id.startsWith('race-')).sort()).toEqual(asked.sort());
  }, 60_000);

  describe('a result() in the process whose worker runs the instance', () => {
    let app: INestApplicationContext;
    const statements: string[] = [];

    beforeAll(async () => {
      const counting: PgPoolLike = {
        query: (text, values) => (
          statements.push(typeof text === 'string' ? text : text.text),
          pool.query(text as string, values)
        ),
        connect: () => pool.connect(),
      };
      @Module({
        imports: [
          WorkflowsModule.forRoot({
            store: new PostgresWorkflowStore({ executor: fromPg(counting), schema }),
            worker: { pollInterval: '1h' },
          }),
        ],
        providers: [Quick, Waits],
      })
      class AppModule {}
      app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
    });

    afterAll(async () => {
      await app?.close();
    });

    it('asks for no notification when the execution here ends the instance', async () => {
      const client = app.get(WorkflowClient);
      const before = (await sync()).length;
      statements.length = 0;
      for (let k = 0; k < 5; k++) {
        const handle = await client.start(Quick, k, { id: `quick-${k}` });
        await expect(handle.result()).resolves.toBe(k * 2);
      }
      expect(statements.filter((sql) => sql.includes('notify_end = true'))).toEqual([]);
      expect(await flags(['quick-0', 'quick-4'])).toEqual([
        { id: 'quick-0', notify_end: false },
        { id: 'quick-4', notify_end: false },
      ]);
      expect((await sync()).length).toBe(before);
    });

    it('asks once the execution here suspends, and is woken when the instance ends in another process', async () => {
      const client = app.get(WorkflowClient);
      const handle = await client.start(Waits, null, { id: 'waits-1' });
      const result = handle.result();
      await vi.waitFor(async () => expect(await flags(['waits-1'])).toEqual([{ id: 'waits-1', notify_end: true }]));
      expect((await handle.status()).status).toBe('suspended');
      // Another process takes it over (a lease in one statement: not due, so this app's worker never
      // claims it meanwhile) and ends it.
      const token = randomUUID();
      await pool.query(
        `UPDATE "${schema}".instances SET status = 'running', lease_token = $2, lease_until = $3 WHERE id = $1`,
        ['waits-1', token, Date.now() + 60_000],
      );
      const now = Date.now();
      expect(
        await store.write('waits-1', token, {
          now,
          entries: [],
          status: 'completed',
          output: 'elsewhere',
          release: { wakeAt: null, waits: [], signalCursor: 0 },
        }),
      ).toBe(true);
      // This app polls once an hour: the notification woke it.
      await expect(result).resolves.toBe('elsewhere');
      expect(await sync()).toContain('waits-1');
    });
  });
});
