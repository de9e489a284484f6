// A step's attempt numbers across kills, on each SQL store: the process running a step is killed
// (SIGKILL) right after the attempt started, twice in a row; the third process must run it as
// attempt 3, never as a number an earlier attempt had (the retry budget counts on it).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'attempt-kill e2e');
  describe.skipIf(!available)(`a step killed twice in a row on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'e2e_att');
    let target: SqlTarget;
    let attempts: string;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      attempts = target.table('attempts');
      await target.store.init();
      await target.query(`CREATE TABLE ${attempts} (attempt INT NOT NULL, pid INT NOT NULL)`);
    });

    afterAll(async () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await target?.close({ drop: true });
    });

    function worker(hang: boolean): Promise<ChildProcess> {
      const child = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/attempt-kill-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema, WF_HANG: hang ? '1' : '0' },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      children.push(child);
      return new Promise((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
        child.stdout!.on('data', (data: Buffer) => {
          if (data.toString().includes('ready')) resolve(child);
        });
      });
    }

    async function attemptsSeen(): Promise<Array<[number, number]>> {
      const rows = await target.query<{ attempt: number; pid: number }>(`SELECT attempt, pid FROM ${attempts}`);
      return rows.map((r) => [Number(r.attempt), Number(r.pid)]);
    }

    async function until(what: string, check: () => Promise<boolean>): Promise<void> {
      const deadline = Date.now() + 30_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }

    it('runs the third attempt as attempt 3', async () => {
      await target.store.create({
        id: 'killed-twice',
        workflow: 'e2e.attempts',
        version: 1,
        input: null,
        deadline: null,
        now: Date.now(),
      });
      for (let kill = 1; kill <= 2; kill++) {
        const doomed = await worker(true);
        await until(`attempt ${kill} to start`, async () => (await attemptsSeen()).length === kill);
        doomed.kill('SIGKILL');
        await once(doomed, 'exit');
      }
      const last = await worker(false);
      await until('the instance to complete', async () => {
        const instance = await target.store.get('killed-twice');
        return instance?.status === 'completed';
      });
      const seen = await attemptsSeen();
      expect(seen.map(([attempt]) => attempt)).toEqual([1, 2, 3]);
      expect(new Set(seen.map(([, pid]) => pid)).size).toBe(3);
      const details = await target.store.get('killed-twice', { journal: true });
      expect(details!.output).toBe(3);
      expect(details!.journal!.map((e) => [e.name, e.state, e.attempts])).toEqual([['work', 'completed', 3]]);
      last.kill('SIGTERM');
      await once(last, 'exit');
    }, 90_000);
  });
}
