// A pause requested in this process (an API or dashboard process, no worker) stops the execution
// running in another OS process (the worker, a child process) through the store's notice, within a
// second, not at the worker's next heartbeat (30 s there); resumed, it carries on where it stopped,
// and no step the journal recorded runs twice. On PostgreSQL (LISTEN/NOTIFY) and MariaDB (the
// wake-up poll's cancel counter); paused by `pause()`, and by a bulk action's page (`pauseMany()`,
// whose notice is the page's: `cancels:[ids]`, one step of the counter).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';
import { EFFECTS, pauseAndResumeRemotely, Ticks, TickTock, type StepEffects } from './remote-pause-scenario.js';

/** The API process runs no step: a step recorded here would mean it ran in the wrong process. */
const noSteps: StepEffects = {
  record: () => Promise.reject(new Error('The API process ran a step: its worker is off.')),
};

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'pause across processes e2e');
  describe.skipIf(!available)(`a pause from another process on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'remotepause');
    let target: SqlTarget;
    let api: INestApplicationContext | undefined;
    let worker: ChildProcess | undefined;

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      await target.store.init();
      await target.query(
        `CREATE TABLE ${target.table('effects')} (instance VARCHAR(255) NOT NULL, step VARCHAR(64) NOT NULL, pid INT NOT NULL)`,
      );
      @Module({
        imports: [WorkflowsModule.forRoot({ store: target.store, worker: { enabled: false } })],
        providers: [{ provide: EFFECTS, useValue: noSteps }, Ticks, TickTock],
      })
      class ApiModule {}
      api = await NestFactory.createApplicationContext(ApiModule, { logger: false });
      worker = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/remote-pause-worker.ts'],
        {
          env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      await new Promise<void>((resolve, reject) => {
        worker!.once('exit', (code) => reject(new Error(`the worker process exited early with ${code}`)));
        worker!.stdout!.on('data', (data: Buffer) => {
          if (data.toString().includes('ready')) resolve();
        });
      });
    }, 30_000);

    afterAll(async () => {
      if (worker && worker.exitCode === null && worker.signalCode === null) {
        worker.kill('SIGTERM');
        await once(worker, 'exit');
      }
      await api?.close();
      await target?.close({ drop: true });
    });

    const runs = (id: string) =>
      target.query<{ step: string; pid: number }>(
        `SELECT step, pid FROM ${target.table('effects')} WHERE instance = ?`,
        [id],
      );

    it('stops the execution running in the other process within a second and resumes it where it stopped, no recorded step run twice', async () => {
      await pauseAndResumeRemotely(api!.get(WorkflowClient), `ticks-${kind}`, runs, worker!.pid!);
    }, 30_000);

    it("does the same when the pause is a bulk action's page (pauseMany(), then resumeMany())", async () => {
      await pauseAndResumeRemotely(api!.get(WorkflowClient), `ticks-bulk-${kind}`, runs, worker!.pid!, 'bulk');
    }, 30_000);
  });
}
