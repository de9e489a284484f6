// Fault injection, bounded (well under 3 minutes): three worker processes on a PostgreSQL server
// the test starts itself, a mixed workload (steps counted in an effects table, sleeps, signals sent
// before and after the wait with repeated dedupe ids, children, a compensation), random SIGKILLs and
// restarts, one SIGSTOP past the lease, and one crash restart of the server. Seeded: set CHAOS_SEED
// to replay a run (the seed is printed).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { OwnPostgres, postgresBinDir } from '../support/own-postgres.js';
import { ChaosChild, ChaosOrder, EFFECTS, PAID, type ChaosInput } from './fixtures/chaos-workflows.js';

const SEED = Number(process.env.CHAOS_SEED ?? randomInt(1, 2 ** 31));
const INSTANCES = 100;
const WORKERS = 3;
const LEASE_MS = 2_000;
const SCHEMA = 'chaos';

const bin = postgresBinDir();
if (!bin && process.env.CI === 'true') throw new Error('The chaos test needs PostgreSQL server binaries (/usr/lib/postgresql/<ver>/bin): CI=true.');
if (!bin) console.warn('Skipping the chaos test: it needs PostgreSQL server binaries under /usr/lib/postgresql/<ver>/bin.');

/** mulberry32: a small seeded generator, so a run can be replayed from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!bin)('chaos: workers killed, stopped, and the database crash-restarted', () => {
  let server: OwnPostgres;
  let pool: pg.Pool;
  let app: INestApplicationContext;
  let client: WorkflowClient;
  const workers = new Map<number, { child: ChildProcess; id: string }>();
  let generation = 0;

  beforeAll(async () => {
    console.log(`chaos seed: ${SEED} (replay with CHAOS_SEED=${SEED})`);
    server = await OwnPostgres.create(bin!);
    pool = new pg.Pool({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 8, connectionTimeoutMillis: 5_000 });
    pool.on('error', () => undefined);
    @Module({
      imports: [WorkflowsModule.forRoot({ store: new PostgresWorkflowStore({ executor: fromPg(pool), schema: SCHEMA }), worker: false })],
      providers: [{ provide: EFFECTS, useValue: { record: async () => undefined } }, ChaosOrder, ChaosChild],
    })
    class StarterModule {}
    app = await NestFactory.createApplicationContext(StarterModule, { logger: ['error'] });
    await app.init();
    client = app.get(WorkflowClient);
    await pool.query(`CREATE TABLE "${SCHEMA}".effects (instance text NOT NULL, name text NOT NULL, pid int NOT NULL)`);
  }, 60_000);

  afterAll(async () => {
    for (const { child } of workers.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await app?.close();
    await pool?.end();
    server?.destroy();
  });

  function spawnWorker(slot: number): Promise<void> {
    const id = `chaos-w${slot}-g${++generation}`;
    const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/chaos-worker.ts'], {
      env: { ...process.env, WF_SCHEMA: SCHEMA, WF_PG_PORT: String(server.port), WF_WORKER_ID: id },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    workers.set(slot, { child, id });
    return new Promise((resolve, reject) => {
      child.once('exit', (code, signal) => reject(new Error(`worker ${id} exited early (${code ?? signal})`)));
      child.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
    });
  }

  /** Leases the worker holds now: the most steps of it a fault can make run again. */
  async function leasesOf(id: string): Promise<number> {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".instances WHERE lease_owner = $1 AND lease_token IS NOT NULL`, [id]);
    return rows[0].n as number;
  }

  /** Retries a call through the database's crash restart. */
  async function persist<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (attempt >= 60) throw error;
        await sleep(250);
      }
    }
  }

  it('finishes every instance as its input dictates, each journal entry and signal once, repeats within the leases lost', async () => {
    const random = seeded(SEED);
    const started = Date.now();
    await Promise.all(Array.from({ length: WORKERS }, (_, slot) => spawnWorker(slot)));

    // The workload, started over the first 8 s so the faults land on work in progress: each input
    // decides the outcome. Signals at random moments after the start, some before the instance
    // reaches its wait, each sent one to three times with the same dedupe id.
    const inputs = new Map<string, ChaosInput>();
    const sends: Array<Promise<unknown>> = [];
    for (let n = 0; n < INSTANCES; n++) {
      const id = `order-${n}`;
      const input: ChaosInput = { n, child: random() < 0.3, sleepMs: Math.floor(random() * 1_500), fail: random() < 0.2 };
      inputs.set(id, input);
      const startAt = Math.floor(random() * 8_000);
      const signalAts = Array.from({ length: 1 + Math.floor(random() * 3) }, () => startAt + Math.floor(random() * 6_000));
      sends.push(
        sleep(startAt)
          .then(() => persist(() => client.start(ChaosOrder, input, { id })))
          .then(() =>
            Promise.all(
              signalAts.map((at) => sleep(at - startAt).then(() => persist(() => client.signal(PAID, { amount: n }, { key: id, id: `pay-${id}` })))),
            ),
          ),
      );
    }

    // The faults, in a seeded order of workers: kill, stop past the lease, crash-restart the server, kill.
    let lostLeases = 0;
    const deadOwners: Array<{ id: string; at: number }> = [];
    const pick = () => Math.floor(random() * WORKERS);
    const kill = async (slot: number) => {
      const { child, id } = workers.get(slot)!;
      child.kill('SIGSTOP'); // frozen first, so its leases can be counted before it dies
      lostLeases += await leasesOf(id);
      child.removeAllListeners('exit');
      child.kill('SIGKILL');
      deadOwners.push({ id, at: Date.now() });
      await spawnWorker(slot);
    };
    await sleep(2_000 + random() * 1_000);
    await kill(pick());
    await sleep(1_000 + random() * 1_000);
    const stopped = workers.get(pick())!;
    stopped.child.kill('SIGSTOP');
    lostLeases += await leasesOf(stopped.id);
    await sleep(LEASE_MS * 2 + 500);
    stopped.child.kill('SIGCONT');
    await sleep(random() * 1_000);
    // The leases held when the server goes down: read before, and again after (a claim may land in
    // between; the server keeps what it committed), counted once each.
    const leaseTokens = async () =>
      (await pool.query(`SELECT lease_token FROM "${SCHEMA}".instances WHERE lease_token IS NOT NULL`)).rows.map((row) => String(row.lease_token));
    const heldAtCrash = new Set(await leaseTokens());
    server.crashRestart();
    for (const token of await persist(leaseTokens)) heldAtCrash.add(token);
    lostLeases += heldAtCrash.size;
    await sleep(1_000 + random() * 2_000);
    await kill(pick());

    // A dead worker's leases lapse and are taken over: none is still held past the lease (plus time
    // for a claim on this busy machine).
    for (const { id, at } of deadOwners) {
      for (;;) {
        const still = await persist(() => leasesOf(id));
        if (still === 0) break;
        expect(Date.now(), `seed ${SEED}: ${still} lease(s) still held by dead worker ${id}`).toBeLessThan(at + LEASE_MS + 4_000);
        await sleep(100);
      }
    }

    await Promise.all(sends);
    const deadline = started + 150_000;
    for (;;) {
      const { rows } = await persist(() =>
        pool.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".instances WHERE status NOT IN ('completed', 'failed', 'cancelled', 'compensation_failed')`),
      );
      if (rows[0].n === 0) break;
      if (Date.now() > deadline) throw new Error(`seed ${SEED}: ${rows[0].n} instances unfinished after 150 s`);
      await sleep(250);
    }

    // Every instance ended as its input says, with each journal entry once.
    for (const [id, input] of inputs) {
      const status = await client.getStatus(id, { journal: true });
      const journal = status.journal!;
      const names = journal.map((entry) => entry.name);
      expect(new Set(names).size, `${id}: a journal name twice`).toBe(names.length);
      const steps = journal.filter((entry) => entry.kind === 'step');
      if (input.fail) {
        expect(status.status, `seed ${SEED}: ${id}`).toBe('failed');
        expect(status.error).toMatchObject({ name: 'NonRetryableError', message: 'no courier' });
        expect(steps.map((e) => [e.name, e.state])).toEqual([
          ['reserve', 'completed'],
          ['charge', 'completed'],
          ['ship', 'failed'],
        ]);
      } else {
        expect(status.status, `seed ${SEED}: ${id}`).toBe('completed');
        expect(status.output).toEqual({ paid: input.n, child: input.child ? input.n * 2 : null });
        expect(steps.map((e) => [e.name, e.state])).toEqual([
          ['reserve', 'completed'],
          ['charge', 'completed'],
        ]);
      }
      expect(journal.find((e) => e.name === 'nap')).toMatchObject({ kind: 'sleep', state: 'completed' });
    }

    // Every signal stored once per dedupe id, and taken exactly once: by the instance of its key.
    const { rows: signals } = await pool.query(`SELECT id::int AS id, key, dedupe_id FROM "${SCHEMA}".signals WHERE name = $1`, [PAID]);
    expect(signals).toHaveLength(INSTANCES);
    const { rows: taken } = await pool.query(
      `SELECT instance_id, (entry->>'signalId')::int AS signal_id FROM "${SCHEMA}".journal WHERE name = 'paid' AND entry->>'state' = 'completed'`,
    );
    expect(taken).toHaveLength(INSTANCES);
    const bySignal = new Map(signals.map((s) => [s.id as number, s]));
    for (const row of taken) {
      expect(bySignal.get(row.signal_id)?.key, `${row.instance_id} took signal ${row.signal_id}`).toBe(row.instance_id);
    }
    expect(new Set(taken.map((row) => row.signal_id)).size).toBe(INSTANCES);

    // Side effects: every step's at least once; repeats no more than the leases the faults cut short.
    const { rows: effects } = await pool.query(`SELECT instance, name, count(*)::int AS n FROM "${SCHEMA}".effects GROUP BY instance, name`);
    const count = (instance: string, name: string) => effects.find((e) => e.instance === instance && e.name === name)?.n ?? 0;
    for (const [id, input] of inputs) {
      for (const name of ['reserve', 'charge', ...(input.fail ? ['ship', 'release'] : [])]) expect(count(id, name), `${id} ${name}`).toBeGreaterThanOrEqual(1);
      if (!input.fail) expect(count(id, 'release'), `${id} compensated without failing`).toBe(0);
      if (input.child) for (const name of ['pick', 'pack']) expect(count(`${id}/child`, name), `${id}/child ${name}`).toBeGreaterThanOrEqual(1);
    }
    const repeats = effects.reduce((sum, e) => sum + (e.n - 1), 0);
    console.log(`chaos seed ${SEED}: ${repeats} repeated side effects, at most ${lostLeases} allowed (leases held at the faults); ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(repeats).toBeLessThanOrEqual(lostLeases);

    for (const { child } of workers.values()) child.kill('SIGTERM');
  }, 180_000);
});
