// Fault injection, bounded (well under 3 minutes, per store): three worker processes on a
// PostgreSQL server, then on a MariaDB server, that the test starts itself, a mixed workload (steps counted in an effects table, sleeps, signals sent
// before and after the wait with repeated dedupe ids, children, a compensation), random SIGKILLs and
// restarts, one SIGSTOP past the lease, and one crash restart of the server. Seeded: set CHAOS_SEED
// to replay a run (the seed is printed).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowClient, WorkflowsModule } from '../../src/index.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import { mariadbInstalled, OwnMariaDb } from '../support/own-mariadb.js';
import { OwnPostgres, postgresBinDir } from '../support/own-postgres.js';
import { ChaosChild, ChaosOrder, EFFECTS, PAID, type ChaosInput } from './fixtures/chaos-workflows.js';

const SEED = Number(process.env.CHAOS_SEED ?? randomInt(1, 2 ** 31));
const INSTANCES = 100;
const WORKERS = 3;
const LEASE_MS = 2_000;
const SCHEMA = 'chaos';

/** The test's own database server, and what the test needs of it: a store, plain SQL, its faults. */
interface Backend {
  store: WorkflowStore;
  /** The worker processes' environment: which store, on which port. */
  env: Record<string, string>;
  /** A statement with `?` placeholders; its rows. */
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** A store table's name, quoted. */
  table(name: string): string;
  /** The signals table's key column. */
  keyColumn: string;
  effectsTable: string;
  crashRestart(): Promise<void>;
  close(): Promise<void>;
}

async function postgresBackend(bin: string): Promise<Backend> {
  const server = await OwnPostgres.create(bin);
  const pool = new pg.Pool({
    host: '127.0.0.1',
    port: server.port,
    user: 'postgres',
    database: 'postgres',
    max: 8,
    connectionTimeoutMillis: 5_000,
  });
  pool.on('error', () => undefined);
  return {
    store: new PostgresWorkflowStore({ executor: fromPg(pool), schema: SCHEMA }),
    env: { WF_STORE: 'postgres', WF_DB_PORT: String(server.port) },
    async query(sql, params = []) {
      let i = 0;
      return (
        await pool.query(
          sql.replace(/\?/g, () => `$${++i}`),
          params,
        )
      ).rows;
    },
    table: (name) => `"${SCHEMA}".${name}`,
    keyColumn: 'key',
    effectsTable: `CREATE TABLE "${SCHEMA}".effects (instance text NOT NULL, name text NOT NULL, pid int NOT NULL)`,
    crashRestart: async () => server.crashRestart(),
    async close() {
      await pool.end();
      server.destroy();
    },
  };
}

async function mariadbBackend(): Promise<Backend> {
  const server = await OwnMariaDb.create();
  const pool = mysql.createPool({
    host: '127.0.0.1',
    port: server.port,
    user: 'root',
    database: 'chaos',
    connectionLimit: 8,
    connectTimeout: 5_000,
  });
  return {
    store: new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: SCHEMA }),
    env: { WF_STORE: 'mysql', WF_DB_PORT: String(server.port) },
    async query(sql, params = []) {
      return (await pool.query(sql, params))[0] as Record<string, unknown>[];
    },
    table: (name) => `\`${SCHEMA}_${name}\``,
    keyColumn: '`key`',
    effectsTable: `CREATE TABLE ${SCHEMA}_effects (instance VARCHAR(255) NOT NULL, name VARCHAR(64) NOT NULL, pid INT NOT NULL)`,
    crashRestart: () => server.crashRestart(),
    async close() {
      await pool.end();
      server.destroy();
    },
  };
}

const bin = postgresBinDir();
const stores: Array<{ name: string; missing: string | null; create: () => Promise<Backend> }> = [
  {
    name: 'PostgreSQL',
    missing: bin ? null : 'PostgreSQL server binaries under /usr/lib/postgresql/<ver>/bin',
    create: () => postgresBackend(bin!),
  },
  {
    name: 'MariaDB',
    missing: mariadbInstalled() ? null : 'MariaDB server binaries (/usr/sbin/mariadbd, mariadb-install-db)',
    create: mariadbBackend,
  },
];
for (const { name, missing } of stores) {
  if (missing && process.env.CI === 'true') throw new Error(`The chaos test on ${name} needs ${missing}: CI=true.`);
  if (missing) console.warn(`Skipping the chaos test on ${name}: it needs ${missing}.`);
}

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

describe.each(stores)(
  'chaos on $name: workers killed, stopped, and the database crash-restarted',
  ({ missing, create }) => {
    if (missing) {
      it.skip(`needs ${missing}`, () => undefined);
      return;
    }
    let db: Backend;
    let app: INestApplicationContext;
    let client: WorkflowClient;
    const workers = new Map<number, { child: ChildProcess; id: string }>();
    let generation = 0;
    /** What the workers logged to stderr: the outages this test causes on purpose, asserted on at the end. */
    const workerLogs: string[] = [];

    beforeAll(async () => {
      console.log(`chaos seed: ${SEED} (replay with CHAOS_SEED=${SEED})`);
      db = await create();
      @Module({
        imports: [WorkflowsModule.forRoot({ store: db.store, worker: false })],
        providers: [{ provide: EFFECTS, useValue: { record: async () => undefined } }, ChaosOrder, ChaosChild],
      })
      class StarterModule {}
      app = await NestFactory.createApplicationContext(StarterModule, { logger: ['error'] });
      await app.init();
      client = app.get(WorkflowClient);
      await db.query(db.effectsTable);
    }, 60_000);

    afterAll(async () => {
      for (const { child } of workers.values())
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await app?.close();
      await db?.close();
    });

    function spawnWorker(slot: number): Promise<void> {
      const id = `chaos-w${slot}-g${++generation}`;
      const child = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'test/e2e/fixtures/chaos-worker.ts'],
        {
          // NO_COLOR: plain log lines, for the check of what the workers logged.
          env: { ...process.env, ...db.env, WF_SCHEMA: SCHEMA, WF_WORKER_ID: id, NO_COLOR: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      child.stderr!.on('data', (data: Buffer) => workerLogs.push(data.toString()));
      workers.set(slot, { child, id });
      return new Promise((resolve, reject) => {
        child.once('exit', (code, signal) => reject(new Error(`worker ${id} exited early (${code ?? signal})`)));
        child.stdout!.on('data', (data: Buffer) => data.toString().includes('ready') && resolve());
      });
    }

    /** Leases the worker holds now: the most steps of it a fault can make run again. */
    async function leasesOf(id: string): Promise<number> {
      const rows = await db.query(
        `SELECT count(*) AS n FROM ${db.table('instances')} WHERE lease_owner = ? AND lease_token IS NOT NULL`,
        [id],
      );
      return Number(rows[0]!.n);
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
        const input: ChaosInput = {
          n,
          child: random() < 0.3,
          sleepMs: Math.floor(random() * 1_500),
          fail: random() < 0.2,
        };
        inputs.set(id, input);
        const startAt = Math.floor(random() * 8_000);
        const signalAts = Array.from(
          { length: 1 + Math.floor(random() * 3) },
          () => startAt + Math.floor(random() * 6_000),
        );
        sends.push(
          sleep(startAt)
            .then(() => persist(() => client.start(ChaosOrder, input, { id })))
            .then(() =>
              Promise.all(
                signalAts.map((at) =>
                  sleep(at - startAt).then(() =>
                    persist(() => client.signal(PAID, { amount: n }, { key: id, id: `pay-${id}` })),
                  ),
                ),
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
        (await db.query(`SELECT lease_token FROM ${db.table('instances')} WHERE lease_token IS NOT NULL`)).map((row) =>
          String(row.lease_token),
        );
      const heldAtCrash = new Set(await leaseTokens());
      await db.crashRestart();
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
          expect(Date.now(), `seed ${SEED}: ${still} lease(s) still held by dead worker ${id}`).toBeLessThan(
            at + LEASE_MS + 4_000,
          );
          await sleep(100);
        }
      }

      await Promise.all(sends);
      const deadline = started + 150_000;
      for (;;) {
        const rows = await persist(() =>
          db.query(
            `SELECT count(*) AS n FROM ${db.table('instances')} WHERE status NOT IN ('completed', 'failed', 'cancelled', 'compensation_failed')`,
          ),
        );
        const unfinished = Number(rows[0]!.n);
        if (unfinished === 0) break;
        if (Date.now() > deadline) throw new Error(`seed ${SEED}: ${unfinished} instances unfinished after 150 s`);
        await sleep(250);
      }

      // Every instance ended as its input says, with each journal entry once.
      const taken: Array<{ instance: string; signalId: number }> = [];
      for (const [id, input] of inputs) {
        const status = await client.getStatus(id, { journal: true });
        const journal = status.journal!;
        for (const entry of journal)
          if (entry.name === 'paid' && entry.state === 'completed')
            taken.push({ instance: id, signalId: Number(entry.signalId) });
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
      const signals = await db.query(
        `SELECT id, ${db.keyColumn} AS signal_key FROM ${db.table('signals')} WHERE name = ?`,
        [PAID],
      );
      expect(signals).toHaveLength(INSTANCES);
      expect(taken).toHaveLength(INSTANCES);
      const keyOf = new Map(signals.map((row) => [Number(row.id), String(row.signal_key)]));
      for (const { instance, signalId } of taken)
        expect(keyOf.get(signalId), `${instance} took signal ${signalId}`).toBe(instance);
      expect(new Set(taken.map((row) => row.signalId)).size).toBe(INSTANCES);

      // Side effects: every step's at least once; repeats no more than the leases the faults cut short.
      const effects = (
        await db.query(`SELECT instance, name, count(*) AS n FROM ${db.table('effects')} GROUP BY instance, name`)
      ).map((row) => ({
        instance: String(row.instance),
        name: String(row.name),
        n: Number(row.n),
      }));
      const count = (instance: string, name: string) =>
        effects.find((e) => e.instance === instance && e.name === name)?.n ?? 0;
      for (const [id, input] of inputs) {
        for (const name of ['reserve', 'charge', ...(input.fail ? ['ship', 'release'] : [])])
          expect(count(id, name), `${id} ${name}`).toBeGreaterThanOrEqual(1);
        if (!input.fail) expect(count(id, 'release'), `${id} compensated without failing`).toBe(0);
        if (input.child)
          for (const name of ['pick', 'pack'])
            expect(count(`${id}/child`, name), `${id}/child ${name}`).toBeGreaterThanOrEqual(1);
      }
      const repeats = effects.reduce((sum, e) => sum + (e.n - 1), 0);
      console.log(
        `chaos seed ${SEED}: ${repeats} repeated side effects, at most ${lostLeases} allowed (leases held at the faults); ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      expect(repeats).toBeLessThanOrEqual(lostLeases);

      // The workers' error log lines are about the store going away in the crash-restart (an
      // outage, a hand-back or an execution it cut short, each to be run again); anything else is
      // a failure. Stack lines that follow them are not log lines.
      const logged = workerLogs
        .join('')
        .split('\n')
        .filter((line) => /\bERROR \[/.test(line));
      const expected = new RegExp(
        [
          'The workflow store failed while ',
          'Handing back (schedule )?"[^"]+" failed; it ',
          'Executing "[^"]+" \\([^)]+\\) failed; it runs again when its lease expires',
          'Starting schedule occurrences failed',
        ]
          .map((start) => `ERROR \\[Workflows\\] ${start}`)
          .join('|'),
      );
      expect(logged.filter((line) => !expected.test(line))).toEqual([]);

      for (const { child } of workers.values()) child.kill('SIGTERM');
    }, 180_000);
  },
);
