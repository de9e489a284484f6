// A worker SIGKILLed inside ctx.transaction(): before the commit (the callback's insert is done, the
// transaction still open) and after it (the next step runs). Another process then finishes the
// instance; the application's row exists exactly once either way. On PostgreSQL and on MariaDB.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type mysql from 'mysql2/promise';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowStore } from '../../src/index.js';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';
import { createPool, freshSchemaName, requirePostgres } from '../support/postgres.js';

/** One database as the test drives it: the store, and the application's table of orders. */
interface Database {
  store: WorkflowStore & { init(): Promise<void>; close?(): Promise<void> };
  createOrders(): Promise<void>;
  pids(id: string): Promise<number[]>;
  drop(): Promise<void>;
}

function postgres(schema: string): Database {
  const pool: pg.Pool = createPool({ max: 3 });
  return {
    store: new PostgresWorkflowStore({ executor: fromPg(pool), schema }),
    createOrders: async () =>
      void (await pool.query(`CREATE TABLE "${schema}".orders (instance text NOT NULL, pid int NOT NULL)`)),
    pids: async (id) =>
      (await pool.query(`SELECT pid FROM "${schema}".orders WHERE instance = $1`, [id])).rows.map((row) =>
        Number(row.pid),
      ),
    drop: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

function mariadb(schema: string): Database {
  const pool: mysql.Pool = createMysqlPool({ connectionLimit: 3 });
  return {
    store: new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }),
    createOrders: async () =>
      void (await pool.query(`CREATE TABLE ${schema}_orders (instance varchar(255) NOT NULL, pid int NOT NULL)`)),
    pids: async (id) => {
      const [rows] = await pool.query<mysql.RowDataPacket[]>(`SELECT pid FROM ${schema}_orders WHERE instance = ?`, [
        id,
      ]);
      return rows.map((row) => Number(row.pid));
    },
    drop: async () => {
      await dropTables(pool, schema);
      await pool.end();
    },
  };
}

const kinds = [
  {
    name: 'PostgreSQL',
    env: 'postgres',
    available: await requirePostgres('ctx.transaction() crash e2e'),
    schema: freshSchemaName('txcrash'),
    open: postgres,
  },
  {
    name: 'MariaDB',
    env: 'mysql',
    available: await requireMysql('ctx.transaction() crash e2e'),
    schema: freshPrefix('txcrash'),
    open: mariadb,
  },
];

for (const kind of kinds) {
  describe.skipIf(!kind.available)(`a worker killed inside ctx.transaction() (${kind.name})`, () => {
    let db: Database;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      db = kind.open(kind.schema);
      await db.store.init();
      await db.createOrders();
    });

    afterAll(async () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await db?.store.close?.();
      await db?.drop();
    });

    /** Starts a worker process in `mode`; resolves once its output has `line`. */
    function worker(mode: string, line: string): Promise<ChildProcess> {
      const child = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/tx-crash-worker.ts'],
        {
          env: { ...process.env, WF_SCHEMA: kind.schema, WF_MODE: mode, WF_STORE: kind.env },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      children.push(child);
      return new Promise((resolve, reject) => {
        let output = '';
        child.once('exit', (code) => reject(new Error(`worker (${mode}) exited early with ${code}`)));
        child.stdout!.on('data', (data: Buffer) => {
          output += data.toString();
          if (output.includes(line)) resolve(child);
        });
      });
    }

    async function finish(id: string): Promise<unknown> {
      const recover = await worker('recover', 'ready');
      const deadline = Date.now() + 30_000;
      try {
        for (;;) {
          const instance = await db.store.get(id);
          if (instance?.status === 'completed') return instance.output;
          if (Date.now() > deadline) throw new Error(`${id} is still ${instance?.status} after 30s`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        recover.kill('SIGKILL');
        await once(recover, 'exit');
      }
    }

    async function kill(child: ChildProcess): Promise<void> {
      child.removeAllListeners('exit');
      child.kill('SIGKILL');
      await once(child, 'exit');
    }

    it('before the commit: the insert is rolled back with the process, and the step runs again once', async () => {
      const id = 'crash-before-commit';
      await db.store.create({ id, workflow: 'e2e.tx-crash', version: 1, input: null, deadline: null, now: Date.now() });
      const doomed = await worker('before-commit', `inserted ${id}`);
      await kill(doomed);
      expect(await db.pids(id)).toEqual([]);
      const journal = (await db.store.get(id, { journal: true }))!.journal!;
      expect(journal.some((entry) => entry.name === 'save')).toBe(false);
      const output = (await finish(id)) as { pid: number };
      const pids = await db.pids(id);
      expect(pids).toHaveLength(1);
      expect(output.pid).toBe(pids[0]);
      expect(pids[0]).not.toBe(doomed.pid);
    });

    it('after the commit: the result is journaled with the row, and the step does not run again', async () => {
      const id = 'crash-after-commit';
      await db.store.create({ id, workflow: 'e2e.tx-crash', version: 1, input: null, deadline: null, now: Date.now() });
      const doomed = await worker('after-commit', `committed ${id}`);
      await kill(doomed);
      expect(await db.pids(id)).toEqual([doomed.pid]);
      const output = (await finish(id)) as { pid: number };
      expect(await db.pids(id)).toEqual([doomed.pid]);
      expect(output.pid).toBe(doomed.pid);
    });
  });
}
