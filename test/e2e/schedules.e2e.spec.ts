// The schedules e2e, on each SQL store: two processes serve an every-second schedule for
// 20 s; each occurrence must start exactly one instance (one process reports creating it), and when
// the process holding the schedule's lease is killed the other takes the lease over.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freshSchema,
  openSqlTarget,
  requireServer,
  SERVER,
  SQL_KINDS,
  type SqlKind,
  type SqlTarget,
} from '../support/sql-target.js';

interface SchedulerProcess {
  child: ChildProcess;
  /** The instances this process created from the schedule, in order. */
  fired: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const occurrence = (id: string) => Date.parse(id.slice('tick@'.length));

/** Registers the scenario's suite for `kind`'s test server. */
for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'schedules e2e');
  describe.skipIf(!available)(`an every-second schedule served by two processes on one ${SERVER[kind]} store`, () => {
    scenario(kind, freshSchema(kind, 'e2e_sched'));
  });
}

function scenario(kind: SqlKind, schema: string): void {
  let target: SqlTarget;
  const processes: SchedulerProcess[] = [];

  beforeAll(async () => {
    target = openSqlTarget(kind, schema, 2);
    await target.store.init();
  });

  afterAll(async () => {
    for (const { child } of processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await target?.close({ drop: true });
  });

  function start(options: { paused?: boolean } = {}): Promise<SchedulerProcess> {
    const child = spawn(
      process.execPath,
      ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/scheduler-process.ts'],
      {
        env: { ...process.env, WF_STORE: kind, WF_SCHEMA: schema, WF_PAUSED: options.paused ? '1' : '0' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const started: SchedulerProcess = { child, fired: [] };
    processes.push(started);
    let buffered = '';
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`scheduler process exited early with ${code}`)));
      child.stdout!.on('data', (data: Buffer) => {
        buffered += data.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          if (line === 'ready') resolve(started);
          else if (line.startsWith('fired ')) started.fired.push(line.slice('fired '.length));
        }
      });
    });
  }

  const holder = async () => (await target.store.getSchedule('tick'))?.leaseOwner ?? null;

  it('starts each occurrence exactly once over 20 s, and the survivor takes over the lease of a killed process', async () => {
    const { store } = target;
    const [a, b] = await Promise.all([start(), start()]);
    await sleep(10_000);
    // Kill whichever process holds the schedule's lease now (the one serving it).
    const owner = await holder();
    const doomed = [a, b].find((p) => owner === `e2e-${p.child.pid}`);
    expect(doomed, `the schedule's lease owner ${owner} is one of the two processes`).toBeDefined();
    const survivor = doomed === a ? b : a;
    expect(doomed!.fired.length).toBeGreaterThan(5);
    doomed!.child.kill('SIGKILL');
    await once(doomed!.child, 'exit');
    const killedAt = Date.now();
    await sleep(10_000);
    expect(await holder()).toBe(`e2e-${survivor.child.pid}`);
    survivor.child.kill('SIGTERM');
    await once(survivor.child, 'exit');
    // The survivor handed the schedule back when it shut down.
    expect(await store.getSchedule('tick')).toMatchObject({ leaseToken: null, leaseUntil: null });

    const runs = (await store.list({ scheduleId: 'tick', limit: 1000, offset: 0 })).map((i) => i.id).sort();
    const times = runs.map(occurrence);
    // Every second from the first occurrence to the last has its instance: none missed, none twice.
    expect(runs.length).toBeGreaterThanOrEqual(18);
    expect(new Set(runs).size).toBe(runs.length);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(1_000);
    // Exactly one process created each of them.
    const fired = [...doomed!.fired, ...survivor.fired];
    expect(fired.length).toBe(runs.length);
    expect(new Set(fired)).toEqual(new Set(runs));
    // After the kill (once its lease lapsed) the survivor started every occurrence, catching up the
    // seconds the dead process held the lease for: late by less than a minute, they were on time.
    const afterKill = runs.filter((id) => occurrence(id) > killedAt);
    expect(afterKill.length).toBeGreaterThan(5);
    for (const id of afterKill) expect(survivor.fired).toContain(id);
    // Every run completes (those the dead process held run again when their leases lapse). One the
    // survivor started just before its SIGTERM was handed back unrun: a process with the schedule
    // paused (it starts nothing) runs what is left, as any process would.
    const finisher = await start({ paused: true });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const unfinished = await store.list({
        scheduleId: 'tick',
        status: ['pending', 'running', 'suspended'],
        limit: 1000,
        offset: 0,
      });
      if (unfinished.length === 0) break;
      if (Date.now() > deadline) throw new Error(`${unfinished.length} scheduled runs did not complete`);
      await sleep(200);
    }
    expect(finisher.fired).toEqual([]);
    finisher.child.kill('SIGTERM');
    await once(finisher.child, 'exit');
  }, 90_000);
}
