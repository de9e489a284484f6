// An operator's pause, cancel or terminate sent from this process (an API or dashboard process, no
// worker) reaches the execution running in another OS process (the worker, a child process)
// through the store's notice, not at the worker's next heartbeat (30 s there). Paused, it is
// handed back within a second, and resumed it carries on where it stopped, no step the journal
// recorded run twice; cancelled or terminated, its running step's signal aborts within a few
// seconds and it ends cancelled (compensated, or not). On PostgreSQL (LISTEN/NOTIFY) and MariaDB
// (the wake-up poll's cancel counter); paused by `pause()`, and by a bulk action's page
// (`pauseMany()`, whose notice is the page's: `cancels:[ids]`, one step of the counter).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import { freshSchema, openSqlTarget, requireServer, SERVER, SQL_KINDS, type SqlTarget } from '../support/sql-target.js';
import {
  cancelCases,
  EFFECTS,
  expectStoppedSoon,
  HoldThenCharge,
  pauseAndResumeRemotely,
  startHolding,
  Ticks,
  TickTock,
  type StepEffects,
} from './remote-control-scenario.js';

/** The API process runs no step: a step recorded here would mean it ran in the wrong process. */
const noSteps: StepEffects = {
  record: () => Promise.reject(new Error('The API process ran a step: its worker is off.')),
};

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'operator control across processes e2e');
  describe.skipIf(!available)(`an operator's control from another process on ${SERVER[kind]}`, () => {
    const schema = freshSchema(kind, 'remotectl');
    let target: SqlTarget;
    let api: INestApplicationContext | undefined;
    let worker: ChildProcess | undefined;

    beforeAll(async () => {
      target = openSqlTarget(kind, schema);
      await target.store.init();
      const seq = kind === 'postgres' ? 'seq bigserial PRIMARY KEY' : 'seq BIGINT AUTO_INCREMENT PRIMARY KEY';
      await target.query(
        `CREATE TABLE ${target.table('effects')} (${seq}, instance VARCHAR(255) NOT NULL, step VARCHAR(64) NOT NULL, pid INT NOT NULL, at BIGINT NOT NULL)`,
      );
      @Module({
        imports: [WorkflowsModule.forRoot({ store: target.store, worker: { enabled: false } })],
        providers: [{ provide: EFFECTS, useValue: noSteps }, Ticks, TickTock, HoldThenCharge],
      })
      class ApiModule {}
      api = await NestFactory.createApplicationContext(ApiModule, { logger: false });
      worker = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/remote-control-worker.ts'],
        { env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema }, stdio: ['ignore', 'pipe', 'inherit'] },
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

    const runs = async (id: string) =>
      (
        await target.query<{ step: string; pid: number; at: number | string }>(
          `SELECT step, pid, at FROM ${target.table('effects')} WHERE instance = ? ORDER BY seq`,
          [id],
        )
      ).map((row) => ({ step: row.step, pid: Number(row.pid), at: Number(row.at) }));
    const client = () => api!.get(WorkflowClient);

    it('a pause stops the execution running in the other process within a second; resumed, it carries on where it stopped, no recorded step run twice', async () => {
      await pauseAndResumeRemotely(client(), `ticks-${kind}`, runs, worker!.pid!);
    }, 30_000);

    it("the same when the pause is a bulk action's page (pauseMany(), then resumeMany())", async () => {
      await pauseAndResumeRemotely(client(), `ticks-bulk-${kind}`, runs, worker!.pid!, 'bulk');
    }, 30_000);

    for (const request of cancelCases) {
      it(`a ${request.request} stops the step running in the other process at once, not at its next heartbeat`, async () => {
        const id = `hold-${request.request}-${kind}`;
        await startHolding(client(), id, runs);
        await expectStoppedSoon(client(), id, request, runs);
      }, 20_000);
    }
  });
}
