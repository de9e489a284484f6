// Deploys and shutdowns with real processes, on each SQL store: worker processes started as
// a main.ts would be (`enableShutdownHooks()`), signalled with SIGTERM as a deploy does, and a
// rolling deploy where the old processes declare version 1 of a workflow and the new ones 1 and 2.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';

interface Worker {
  child: ChildProcess;
  out: string[];
  err: string[];
}

/** Registers the scenario's suite for `kind`'s test server. */
for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'deploy e2e');
  describe.skipIf(!available)(`deploys and shutdowns of worker processes on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'deploy');
    let target: SqlTarget;
    let effects: string;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      effects = target.table('effects');
      await target.store.init();
      await target.query(
        `CREATE TABLE ${effects} (instance VARCHAR(255) NOT NULL, what VARCHAR(16) NOT NULL, version INT NOT NULL, attempt INT NOT NULL, pid INT NOT NULL)`,
      );
    });
    afterEach(async () => {
      for (const child of children.splice(0)) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    });
    afterAll(async () => {
      await target?.close({ drop: true });
    });

    function worker(env: Record<string, string> = {}): Promise<Worker> {
      const child = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/deploy-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      const out: string[] = [];
      const err: string[] = [];
      child.stderr!.on('data', (data: Buffer) => err.push(data.toString()));
      return new Promise((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker exited early with ${code}: ${err.join('')}`)));
        child.stdout!.on('data', (data: Buffer) => {
          out.push(data.toString());
          if (data.toString().includes('ready')) resolve({ child, out, err });
        });
      });
    }

    const effectsOf = (id: string) =>
      target.query<{ what: string; attempt: number; pid: number; version: number }>(
        `SELECT what, attempt, pid, version FROM ${effects} WHERE instance = ? ORDER BY attempt, what DESC`,
        [id],
      );
    async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 30_000): Promise<T> {
      const deadline = Date.now() + ms;
      for (;;) {
        const value = await read();
        if (ok(value)) return value;
        if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${ms} ms`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    const create = (id: string, input: unknown, version = 1, workflow = 'deploy.flow') =>
      target.store.create({ id, workflow, version, input, deadline: null, now: Date.now() });
    async function sigterm(w: Worker): Promise<number> {
      const sent = Date.now();
      w.child.kill('SIGTERM');
      await once(w.child, 'exit');
      // Nest closes the app, then signals the process again to end it.
      expect(w.child.signalCode).toBe('SIGTERM');
      expect(w.err.join('')).not.toContain('UNHANDLED');
      return Date.now() - sent;
    }

    it('SIGTERM during a step: handed back at once, unrecorded, and run by the next process as attempt 2', async () => {
      await create('coop', { mode: 'cooperative' });
      const old = await worker({ WF_SHUTDOWN_TIMEOUT: '5s' });
      await until(
        () => effectsOf('coop'),
        (rows) => rows.length > 0,
      );
      expect(await sigterm(old)).toBeLessThan(5_000);
      const handedBack = await target.store.get('coop', { journal: true });
      expect(handedBack).toMatchObject({ leaseToken: null, leaseUntil: null, journal: [] });
      expect(handedBack!.wakeAt!).toBeLessThanOrEqual(Date.now());
      const next = await worker();
      await until(
        () => target.store.get('coop'),
        (instance) => instance?.status === 'completed',
      );
      expect((await effectsOf('coop')).map((row) => [row.what, row.attempt, row.pid])).toEqual([
        ['start', 1, old.child.pid],
        ['start', 2, next.child.pid],
        ['end', 2, next.child.pid],
      ]);
      const { journal } = (await target.store.get('coop', { journal: true }))!;
      expect(journal!.map((entry) => [entry.name, entry.state, entry.attempts])).toEqual([['work', 'completed', 2]]);
    }, 60_000);

    it('SIGTERM during a step that ignores its signal: released when shutdownTimeout passes, logged, rerun as attempt 2', async () => {
      await create('stubborn', { mode: 'stubborn', ms: 10_000 });
      const old = await worker({ WF_SHUTDOWN_TIMEOUT: '1s' });
      await until(
        () => effectsOf('stubborn'),
        (rows) => rows.length > 0,
      );
      const took = await sigterm(old);
      expect(took).toBeGreaterThanOrEqual(900);
      expect(took).toBeLessThan(5_000);
      expect(old.out.join('')).toContain(
        'Instance "stubborn" (deploy.flow@1) was still running step "work" when shutdownTimeout passed',
      );
      expect(await target.store.get('stubborn', { journal: true })).toMatchObject({ leaseToken: null, journal: [] });
      const next = await worker();
      await until(
        () => target.store.get('stubborn'),
        (instance) => instance?.status === 'completed',
      );
      expect((await effectsOf('stubborn')).map((row) => [row.what, row.attempt, row.pid])).toEqual([
        ['start', 1, old.child.pid],
        ['start', 2, next.child.pid],
        ['end', 2, next.child.pid],
      ]);
    }, 60_000);

    it('rolling deploy: a version runs only where it is declared; an undeclared workflow stays pending', async () => {
      await create('v1', { mode: 'quick' }, 1);
      await create('v2', { mode: 'quick' }, 2);
      await create('removed', { mode: 'quick' }, 1, 'deploy.removed');
      const old = await worker({ WF_VERSIONS: '1' });
      await until(
        () => target.store.get('v1'),
        (instance) => instance?.status === 'completed',
      );
      // Several polls of the old process (200 ms each) pass the new version by.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await target.store.get('v2')).toMatchObject({ status: 'pending', runs: 0, leaseOwner: null });
      const next = await worker({ WF_VERSIONS: '1,2' });
      await until(
        () => target.store.get('v2'),
        (instance) => instance?.status === 'completed',
      );
      expect((await effectsOf('v2')).map((row) => [row.what, row.version, row.pid])).toEqual([
        ['start', 2, next.child.pid],
        ['end', 2, next.child.pid],
      ]);
      expect(await target.store.get('removed')).toMatchObject({
        status: 'pending',
        runs: 0,
        leaseOwner: null,
        error: null,
      });
      await sigterm(old);
      await sigterm(next);
    }, 60_000);
  });
}
