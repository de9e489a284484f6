// Flow control across two worker OS processes on one SQL store (issue 32): debounced starts sent
// from both processes at once make one instance, which runs once with the burst's last input; and a
// big tenant's backlog, claimed by both processes, does not hold up a small tenant's new instance.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';

const BIG = 300;

interface Reply {
  seq: number;
  id?: string;
  error?: string;
}

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'flow-control e2e');
  describe.skipIf(!available)(`flow control across two worker processes on one ${SERVER[kind]} store`, () => {
    const schema = freshSchema(kind, 'flow');
    let target: SqlTarget;
    let effects: string;
    let workers: ChildProcess[] = [];
    let seq = 0;

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      effects = target.table('effects');
      await target.store.init();
      await target.query(
        `CREATE TABLE ${effects} (instance VARCHAR(255) NOT NULL, tag VARCHAR(255) NOT NULL, pid INT NOT NULL, at BIGINT NOT NULL)`,
      );
      workers = await Promise.all([worker(), worker()]);
    }, 60_000);

    afterAll(async () => {
      await Promise.all(
        workers.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          await once(child, 'exit');
        }),
      );
      await target?.close({ drop: true });
    }, 30_000);

    function worker(): Promise<ChildProcess> {
      const child = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/flow-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema },
          stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
        },
      );
      return new Promise((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
        child.stdout!.on('data', (data: Buffer) => {
          if (data.toString().includes('ready')) resolve(child);
        });
      });
    }

    /** A debounced start of `e2e.debounced` made by `child`'s own client; resolves to the handle's id. */
    function startIn(child: ChildProcess, n: string, key: string): Promise<string> {
      const message = { seq: ++seq, input: { n }, key, period: '2s' };
      return new Promise((resolve, reject) => {
        const onMessage = (reply: Reply) => {
          if (reply.seq !== message.seq) return;
          child.off('message', onMessage);
          if (reply.id) resolve(reply.id);
          else reject(new Error(reply.error));
        };
        child.on('message', onMessage);
        child.send(message);
      });
    }

    async function rows<R>(sql: string, params: unknown[] = []): Promise<R[]> {
      return target.query<R>(sql, params);
    }

    async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const value = await read();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    it('debounced starts of one key from both processes at once make one instance, run once with the last input', async () => {
      const [one, two] = workers as [ChildProcess, ChildProcess];
      // Both processes start with the key at the same moment, ten times each.
      const ids = await Promise.all(
        Array.from({ length: 10 }, (_, i) => [
          startIn(one, `one-${i}`, 'tenant-7'),
          startIn(two, `two-${i}`, 'tenant-7'),
        ]).flat(),
      );
      expect(new Set(ids).size).toBe(1);
      // The burst's last start: its input is what runs.
      expect(await startIn(two, 'last', 'tenant-7')).toBe(ids[0]);

      const ran = await until(async () => {
        const found = await rows<{ instance: string; tag: string }>(
          `SELECT instance, tag FROM ${effects} WHERE instance = ?`,
          [ids[0]],
        );
        return found.length > 0 ? found : undefined;
      }, 'the debounced instance to run');
      expect(ran).toEqual([{ instance: ids[0], tag: 'last' }]);
      const done = await until(async () => {
        const instance = await target.store.get(ids[0]!);
        return instance?.status === 'completed' ? instance : undefined;
      }, 'the debounced instance to complete');
      expect(done.output).toBe('last');
      expect(await target.store.list({ workflow: 'e2e.debounced', limit: 10, offset: 0 })).toHaveLength(1);
    }, 60_000);

    it("a big tenant's backlog claimed by both processes does not hold up a small tenant's new instance", async () => {
      const { store } = target;
      const earlier = Date.now() - 10_000; // the whole backlog is due before the small tenant's instance
      for (let i = 0; i < BIG; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            store.create({
              id: `big-${i + j}`,
              workflow: 'e2e.fair',
              version: 1,
              input: { tenant: 'big' },
              concurrencyKey: 'big',
              deadline: null,
              now: earlier + i + j,
            }),
          ),
        );
      }
      // Both processes are working through the backlog.
      await until(async () => {
        const [row] = await rows<{ n: number | string }>(
          `SELECT COUNT(DISTINCT pid) AS n FROM ${effects} WHERE tag = 'big'`,
        );
        return Number(row!.n) === 2 ? true : undefined;
      }, 'both processes to run the big tenant');

      const createdAt = Date.now();
      await store.create({
        id: 'small-1',
        workflow: 'e2e.fair',
        version: 1,
        input: { tenant: 'small' },
        concurrencyKey: 'small',
        deadline: null,
        now: createdAt,
      });
      const small = await until(async () => {
        const [row] = await rows<{ at: number | string }>(`SELECT at FROM ${effects} WHERE instance = 'small-1'`);
        return row ? Number(row.at) : undefined;
      }, 'the small tenant to run');

      const count = async (sql: string, params: unknown[]) =>
        Number((await rows<{ n: number | string }>(sql, params))[0]!.n);
      // Started before the small one: the big instances that ran meanwhile (what the processes held
      // or had claimed ahead when it was created, and a claim or two), far from the backlog's end.
      const before = await count(`SELECT COUNT(*) AS n FROM ${effects} WHERE tag = 'big' AND at <= ?`, [small]);
      const meanwhile = await count(`SELECT COUNT(*) AS n FROM ${effects} WHERE tag = 'big' AND at > ? AND at <= ?`, [
        createdAt,
        small,
      ]);
      expect(before).toBeLessThan(BIG / 2);
      // Two processes of two slots, each with up to two claimed ahead, then the claim that takes it.
      expect(meanwhile).toBeLessThanOrEqual(12);
    }, 60_000);
  });
}
