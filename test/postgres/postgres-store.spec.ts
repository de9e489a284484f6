import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import { WorkflowError } from '../../src/errors/workflow.error.js';
import { MIGRATIONS } from '../../src/postgres/migrations.generated.js';
import { migrationLabel } from '../../src/sql/migration-runner.js';
import {
  fromPg,
  POSTGRES_KEY_LIMITS,
  PostgresWorkflowStore,
  WorkflowSchemaError,
  type PgPoolLike,
  type SqlExecutor,
} from '../../src/postgres/index.js';
import type { NewWorkflowInstance, NewWorkflowSignal } from '../../src/storage/workflow-store.js';
import {
  createPool,
  dropSchema,
  freshSchemaName,
  pgConnection,
  PG_REQUIREMENT,
  recordingPool,
  requirePostgres,
} from '../support/postgres.js';

/** Every migration this package ships, as `migrate()` reports them. */
const LABELS = MIGRATIONS.map(migrationLabel);

const T = 1_700_000_000_000;
const available = await requirePostgres('PostgresWorkflowStore');

const instance = (id: string, overrides: Partial<NewWorkflowInstance> = {}): NewWorkflowInstance => ({
  id,
  workflow: 'orders.fulfil',
  version: 1,
  input: { b: 1, a: null },
  deadline: null,
  now: T,
  ...overrides,
});
const signal = (name: string, overrides: Partial<NewWorkflowSignal> = {}): NewWorkflowSignal => ({
  name,
  key: null,
  dedupeId: null,
  payload: { at: 'now' },
  now: T,
  ...overrides,
});

/** Leases `id` (of workflow `orders.fulfil` v1, due at T) and returns the token and signal cursor. */
async function lease(store: PostgresWorkflowStore, id: string): Promise<{ token: string; cursor: number }> {
  const token = randomUUID();
  const claim = await store.claim({
    owner: 'w',
    token,
    now: T,
    leaseUntil: T + 60_000,
    limit: 1,
    workflows: [{ name: 'orders.fulfil', version: 1 }],
  });
  if (claim.instances[0]?.id !== id)
    throw new Error(`Expected to lease ${id}, got ${claim.instances.map((i) => i.id).join()}.`);
  return { token, cursor: claim.lastSignalId };
}

/** Counts a listener's calls; `next()` resolves at the next one, or rejects after `ms`. */
function calls(ms = 5_000) {
  let count = 0;
  const waiters: Array<{ target: number; resolve: () => void }> = [];
  return {
    listener: () => {
      count++;
      for (const waiter of waiters.filter((w) => count >= w.target)) waiter.resolve();
    },
    get count() {
      return count;
    },
    next(): Promise<void> {
      const target = count + 1;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`No notification within ${ms} ms (had ${count}).`)), ms);
        waiters.push({ target, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
  };
}

describe.skipIf(!available)(`PostgresWorkflowStore (${PG_REQUIREMENT})`, () => {
  let pool: pg.Pool;
  const schemas: string[] = [];
  const schema = (prefix = 't') => {
    const name = freshSchemaName(prefix);
    schemas.push(name);
    return name;
  };
  /** A migrated store on a fresh schema. */
  const migrated = async (options: { pool?: pg.Pool } = {}) => {
    const store = new PostgresWorkflowStore({ executor: fromPg(options.pool ?? pool), schema: schema() });
    await store.init();
    return store;
  };

  beforeAll(() => {
    pool = createPool({ max: 12 });
  });
  afterAll(async () => {
    for (const name of schemas) await dropSchema(pool, name);
    await pool.end();
  });

  describe('migrations', () => {
    it('applies each migration once, however often init() runs', async () => {
      const name = schema();
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: name });
      expect(await store.migrate()).toEqual(LABELS);
      await store.init();
      await new PostgresWorkflowStore({ executor: fromPg(pool), schema: name }).init();
      const { rows } = await pool.query(`SELECT version, name FROM "${name}".migrations ORDER BY version`);
      expect(rows).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
    });

    it('migrates once when five stores start together on one schema', async () => {
      const name = schema();
      const stores = Array.from(
        { length: 5 },
        () => new PostgresWorkflowStore({ executor: fromPg(pool), schema: name }),
      );
      const applied = await Promise.all(stores.map((store) => store.migrate()));
      expect(applied.filter((list) => list.length > 0)).toEqual([LABELS]);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${name}".migrations`);
      expect(rows[0].n).toBe(MIGRATIONS.length);
      // And the schema works.
      expect((await stores[3]!.create(instance('a'))).created).toBe(true);
    });

    it('migrationSql() builds the schema a store with migrate: false accepts', async () => {
      const name = schema();
      await pool.query(PostgresWorkflowStore.migrationSql(name));
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: name, migrate: false });
      await store.init();
      expect((await store.create(instance('a'))).created).toBe(true);
      expect(PostgresWorkflowStore.migrationSql()).toContain('CREATE SCHEMA IF NOT EXISTS "nest_workflows"');
    });

    it('with migrate: false, an empty schema fails init() with a WorkflowSchemaError saying how to migrate', async () => {
      const name = schema();
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: name, migrate: false });
      const error = await store.init().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkflowSchemaError);
      expect((error as Error).message).toContain(`npx nest-workflows migrate --postgres <url> --schema ${name}`);
      expect((error as Error).message).toContain('0001_init');
      expect((error as Error).message).toContain(`migrationSql('${name}')`);
      // Nothing was created.
      const { rows } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name]);
      expect(rows).toEqual([]);
    });

    it('does not migrate by default when NODE_ENV is production, and its error says so', async () => {
      const name = schema();
      const previous = process.env.NODE_ENV;
      process.env.NODE_ENV = 'production';
      try {
        const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: name });
        const error = await store.init().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(WorkflowSchemaError);
        expect((error as Error).message).toMatch(/`migrate` is not set and NODE_ENV is "production"/);
        expect((error as Error).message).not.toMatch(/`migrate` is false/);
      } finally {
        process.env.NODE_ENV = previous;
      }
    });
  });

  describe('schema names', () => {
    it('quotes the schema everywhere: the reserved word "order" and "_1" work end to end', async () => {
      // Fixed names: hold a session lock so concurrent runs of this test take turns.
      const guard = await pool.connect();
      try {
        await guard.query(`SELECT pg_advisory_lock(hashtextextended('@nestjs/workflows:test:awkward-schemas', 0))`);
        for (const name of ['order', '_1']) {
          await dropSchema(pool, name);
          const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: name });
          try {
            await store.init();
            const stop = await store.listen(() => undefined);
            await store.create(instance('a', { concurrencyKey: 'k', rateLimitKey: 'r' }));
            const claim = await store.claim({
              owner: 'w',
              token: 't',
              now: T,
              leaseUntil: T + 1_000,
              limit: 5,
              workflows: [{ name: 'orders.fulfil', version: 1 }],
              limits: [{ workflow: 'orders.fulfil', limit: 2, perKey: 1 }],
              rateLimits: [
                { workflow: 'orders.fulfil', limit: { max: 5, duration: 1_000 }, perKey: { max: 1, duration: 1_000 } },
              ],
            });
            expect(claim.instances.map((i) => i.id)).toEqual(['a']);
            expect(
              await store.write('a', 't', {
                now: T + 1,
                entries: [{ name: 'step', kind: 'step', state: 'completed', value: 1, createdAt: T, updatedAt: T }],
                status: 'suspended',
                release: { wakeAt: null, waits: [{ name: 'go', key: null }], signalCursor: claim.lastSignalId },
              }),
            ).toBe(true);
            expect(await store.signal(signal('go'))).toMatchObject({ woken: 1, created: true });
            expect(await store.purge({ statuses: ['completed'], before: T + 10_000, limit: 10 })).toMatchObject({
              rateLimits: 2,
            });
            expect((await store.get('a', { journal: true }))?.journal).toHaveLength(1);
            await stop();
          } finally {
            await store.close();
            await dropSchema(pool, name);
          }
        }
      } finally {
        await guard.query(`SELECT pg_advisory_unlock(hashtextextended('@nestjs/workflows:test:awkward-schemas', 0))`);
        guard.release();
      }
    });

    it.each([['bad"name'], ['Upper'], ['1st_workflows'], [''], ['a'.repeat(41)], ['has space'], ['dash-ed']])(
      'refuses the schema name %j with a WorkflowSchemaError naming it and the rule',
      (name) => {
        const make = () => new PostgresWorkflowStore({ executor: fromPg(pool), schema: name });
        expect(make).toThrow(WorkflowSchemaError);
        expect(make).toThrow(JSON.stringify(name));
        expect(make).toThrow(
          'lowercase letters, digits and underscores, not starting with a digit, at most 40 characters',
        );
        expect(() => PostgresWorkflowStore.migrationSql(name)).toThrow(WorkflowSchemaError);
      },
    );
  });

  describe('connections', () => {
    it('explains an unreachable server at init()', async () => {
      const unreachable = createPool({ port: 1, connectionTimeoutMillis: 2_000 });
      try {
        const store = new PostgresWorkflowStore({ executor: fromPg(unreachable), schema: schema() });
        const error = (await store.init().catch((e: unknown) => e)) as Error;
        expect(error).toBeInstanceOf(WorkflowError);
        expect(error.message).toContain('could not reach the PostgreSQL server');
        expect(error.message).toContain('ECONNREFUSED');
        expect(error.message).toContain('PGHOST/PGPORT');
      } finally {
        await unreachable.end();
      }
    });

    it('explains a missing database at init()', async () => {
      const database = `missing_${randomUUID().slice(0, 8)}`;
      const missing = createPool({ database });
      try {
        const store = new PostgresWorkflowStore({ executor: fromPg(missing), schema: schema() });
        const error = (await store.init().catch((e: unknown) => e)) as Error;
        expect(error).toBeInstanceOf(WorkflowError);
        expect(error.message).toContain('the database does not exist');
        expect(error.message).toContain(`database "${database}" does not exist`);
      } finally {
        await missing.end();
      }
    });

    it('fromPg() wants a Pool: anything else gets an error that says what to pass', async () => {
      expect(() => fromPg({} as PgPoolLike)).toThrow(/expects a pg Pool/);
      expect(() => fromPg(null as unknown as PgPoolLike)).toThrow(/expects a pg Pool/);
      const client = await pool.connect();
      try {
        expect(() => fromPg(client as unknown as PgPoolLike)).toThrow(/client checked out of one/);
      } finally {
        client.release();
      }
      expect(() => new PostgresWorkflowStore({ executor: pool as never })).toThrow(/fromPg\(pool\)/);
    });

    it('close() releases the LISTEN connection and leaves the pool open', async () => {
      const own = createPool({ max: 3 });
      try {
        const store = await migrated({ pool: own });
        await store.listen(() => undefined);
        // Wake-ups and ends share the connection.
        await store.listenForEnds(() => undefined);
        expect(own.totalCount - own.idleCount).toBe(1);
        await store.close();
        expect(own.totalCount - own.idleCount).toBe(0);
        expect((await own.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await own.end();
      }
    });
  });

  describe('key limits', () => {
    it('refuses a key longer than its limit with a RangeError naming it, writing nothing', async () => {
      const store = await migrated();
      const long = 'x'.repeat(POSTGRES_KEY_LIMITS.instanceId + 1);
      await expect(store.create(instance(long))).rejects.toThrow(/instance id is 256 characters long.*at most 255/);
      await expect(store.create(instance(long))).rejects.toBeInstanceOf(RangeError);
      await expect(store.signal(signal('s'.repeat(256)))).rejects.toThrow(/signal name .*at most 255/);
      await expect(store.signal(signal('s', { key: 'k'.repeat(256) }))).rejects.toThrow(/signal key/);
      // Characters, not UTF-16 units: 255 emoji fit.
      expect((await store.create(instance('😀'.repeat(255)))).created).toBe(true);
      expect(await store.list({ limit: 10, offset: 0 })).toHaveLength(1);
      expect(await store.signals({ name: 's', key: null, afterId: 0, upToId: 100 })).toEqual([]);
    });
  });

  describe('payloads and journal', () => {
    it('keeps JSON exactly: key order, null versus absent, strings that look like JSON, undefined input as null', async () => {
      const store = await migrated();
      const input = { z: 1, a: { y: null, b: [1, '2', { c: '{"not":"parsed"}' }] }, u: 'ü\u0001' };
      await store.create(instance('exact', { input }));
      await store.create(instance('none', { input: undefined }));
      const read = await store.get('exact');
      expect(JSON.stringify(read?.input)).toBe(JSON.stringify(input));
      expect((await store.get('none'))?.input).toBeNull();
      const { token } = await lease(store, 'exact');
      await store.write('exact', token, {
        now: T + 1,
        entries: [
          {
            name: 's',
            kind: 'step',
            state: 'completed',
            value: { b: 2, a: 1 },
            error: null,
            createdAt: T,
            updatedAt: T,
          },
        ],
        customStatus: 'just a string',
        output: null,
      });
      const details = await store.get('exact', { journal: true });
      expect(JSON.stringify(details?.journal?.[0])).toBe(
        JSON.stringify({
          name: 's',
          kind: 'step',
          state: 'completed',
          value: { b: 2, a: 1 },
          error: null,
          createdAt: T,
          updatedAt: T,
        }),
      );
      expect(details).toMatchObject({ customStatus: 'just a string', output: null });
    });

    it('a write naming one entry twice keeps its first place and its last value (no upsert error)', async () => {
      const store = await migrated();
      await store.create(instance('twice'));
      const { token } = await lease(store, 'twice');
      const entry = (name: string, value: unknown) => ({
        name,
        kind: 'step' as const,
        state: 'completed' as const,
        value,
        createdAt: T,
        updatedAt: T,
      });
      expect(
        await store.write('twice', token, { now: T, entries: [entry('a', 1), entry('b', 2), entry('a', 3)] }),
      ).toBe(true);
      expect((await store.get('twice', { journal: true }))?.journal?.map((e) => [e.name, e.value])).toEqual([
        ['a', 3],
        ['b', 2],
      ]);
    });
  });

  describe("the application's transaction", () => {
    it('createInTransaction() commits and rolls back with it', async () => {
      const store = await migrated();
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        expect((await store.createInTransaction(client, instance('kept'))).created).toBe(true);
        expect(await store.get('kept')).toBeNull();
        await client.query('COMMIT');
        expect(await store.get('kept')).toMatchObject({ id: 'kept', status: 'pending' });

        await client.query('BEGIN');
        expect((await store.createInTransaction(client, instance('dropped'))).created).toBe(true);
        // A duplicate inside the transaction is ignored, never an error that would abort it.
        expect((await store.createInTransaction(client, instance('kept'))).created).toBe(false);
        await client.query('ROLLBACK');
        expect(await store.get('dropped')).toBeNull();
      } finally {
        client.release();
      }
    });

    it('calls made together on one transaction run one at a time: one that fails undoes all of itself and nothing of a start that already answered', async () => {
      const store = await migrated();
      const client = await pool.connect();
      let released!: () => void;
      const createReleased = new Promise<void>((resolve) => (released = resolve));
      let held = false;
      // The application's transaction as a SqlExecutor over its client. The signal's first
      // statement waits for the start to have answered (its RELEASE done), then fails (a lock or
      // statement timeout, say): the signal rolls back to its savepoint.
      const handle: SqlExecutor = {
        async query(sql, params) {
          if (!held && sql.startsWith('SHOW transaction_isolation')) {
            held = true;
            await createReleased;
            throw new Error('the signal failed after its savepoint');
          }
          const result = await client.query(sql, params as unknown[]);
          if (sql.startsWith('RELEASE')) released();
          return { rows: result.rows as Array<Record<string, unknown>>, rowCount: result.rowCount ?? 0 };
        },
        transaction: (fn) => fn(handle),
      };
      try {
        await client.query('BEGIN');
        const [started, sent] = await Promise.allSettled([
          store.createInTransaction(handle, instance('started-together')),
          store.signalInTransaction(handle, signal('fails-together')),
        ]);
        expect(sent.status).toBe('rejected');
        expect(started).toMatchObject({ status: 'fulfilled', value: { created: true } });
        // The application goes on with its transaction and commits: the start it was told of is there.
        await client.query('COMMIT');
        expect(await store.get('started-together')).toMatchObject({ id: 'started-together', status: 'pending' });
      } finally {
        client.release();
      }
    });

    it('signalInTransaction() commits and rolls back with it, and wakes only when it commits', async () => {
      const store = await migrated();
      await store.create(instance('waiter'));
      const claim = await store.claim({
        owner: 'w',
        token: 't',
        now: T,
        leaseUntil: T + 1_000,
        limit: 1,
        workflows: [{ name: 'orders.fulfil', version: 1 }],
      });
      await store.write('waiter', 't', {
        now: T,
        entries: [],
        status: 'suspended',
        release: { wakeAt: null, waits: [{ name: 'paid', key: 'o1' }], signalCursor: claim.lastSignalId },
      });
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        expect(await store.signalInTransaction(client, signal('paid', { key: 'o1', now: T + 5 }))).toEqual({
          id: 1,
          woken: 1,
          created: true,
          key: 'o1',
        });
        await client.query('ROLLBACK');
        expect(await store.get('waiter')).toMatchObject({ wakeAt: null });
        expect(await store.signals({ name: 'paid', key: 'o1', afterId: 0, upToId: 100 })).toEqual([]);

        await client.query('BEGIN');
        const sent = await store.signalInTransaction(client, signal('paid', { key: 'o1', dedupeId: 'e1', now: T + 6 }));
        // Stored once: the repeat in the same transaction is a no-op, not an aborting error.
        expect(
          await store.signalInTransaction(client, signal('paid', { key: 'o1', dedupeId: 'e1', now: T + 7 })),
        ).toEqual({
          ...sent,
          woken: 0,
          created: false,
        });
        await client.query('COMMIT');
        // The rolled-back signal's id is not reused (ids come from a sequence): the next one is above it.
        expect(sent).toMatchObject({ id: 2, woken: 1, created: true });
        expect(await store.get('waiter')).toMatchObject({ wakeAt: T + 6 });
      } finally {
        client.release();
      }
    });

    it('signalInTransaction() refuses REPEATABLE READ, and a client outside a transaction', async () => {
      const store = await migrated();
      const client = await pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await expect(store.signalInTransaction(client, signal('s'))).rejects.toThrow(/READ COMMITTED.*REPEATABLE READ/);
        await client.query('ROLLBACK');
        await expect(store.signalInTransaction(client, signal('s'))).rejects.toThrow(/not in a transaction/);
        await expect(store.signalInTransaction(pool, signal('s'))).rejects.toThrow(/is a pg Pool/);
      } finally {
        client.release();
      }
    });
  });

  describe('LISTEN/NOTIFY', () => {
    it("wakes another store's listener when an instance is created due now or a signal wakes one", async () => {
      const listening = await migrated();
      const other = new PostgresWorkflowStore({ executor: fromPg(pool), schema: listening.schema });
      const heard = calls();
      const stop = await listening.listen(heard.listener);
      try {
        let next = heard.next();
        await other.create(instance('now', { now: Date.now() }));
        await next;

        // Due later: no notification; a signal that wakes nothing: none either.
        await other.create(instance('later', { wakeAt: Date.now() + 60_000 }));
        await other.signal(signal('nobody-waits'));

        const claim = await other.claim({
          owner: 'w',
          token: 't',
          now: Date.now(),
          leaseUntil: Date.now() + 60_000,
          limit: 1,
          workflows: [{ name: 'orders.fulfil', version: 1 }],
        });
        await other.write('now', 't', {
          now: Date.now(),
          entries: [],
          status: 'suspended',
          release: { wakeAt: null, waits: [{ name: 'go', key: 'k' }], signalCursor: claim.lastSignalId },
        });
        expect(heard.count).toBe(1);
        next = heard.next();
        expect((await other.signal(signal('go', { key: 'k', now: Date.now() }))).woken).toBe(1);
        await next;
        expect(heard.count).toBe(2);
      } finally {
        await stop();
        await listening.close();
      }
    });

    it('names a start (and a hand-back) in its notification, and claim() with that id takes just it, by key, ahead of the claim order', async () => {
      const listening = await migrated();
      const other = new PostgresWorkflowStore({ executor: fromPg(pool), schema: listening.schema });
      const named: Array<string | undefined> = [];
      const heard = calls();
      const stop = await listening.listen((id) => {
        named.push(id);
        heard.listener();
      });
      try {
        let next = heard.next();
        await other.create(instance('ahead', { now: Date.now() - 1_000, priority: -1 }));
        await next;
        next = heard.next();
        await other.create(instance('named', { now: Date.now() }));
        await next;
        expect(named).toEqual(['ahead', 'named']);
        const now = Date.now();
        const request = {
          owner: 'w',
          token: randomUUID(),
          now,
          leaseUntil: now + 60_000,
          limit: 10,
          workflows: [{ name: 'orders.fulfil', version: 1 }],
        };
        const byId = await listening.claim({ ...request, ids: ['named'] });
        expect(byId.instances.map((i) => i.id)).toEqual(['named']);
        expect(byId.instances[0]).toMatchObject({ status: 'running', runs: 1, leaseToken: request.token });
        // Taken already: by id again, nothing; the plain claim then takes the rest in claim order.
        expect((await listening.claim({ ...request, token: randomUUID(), ids: ['named'] })).instances).toEqual([]);
        // Handed back due now: named again, and taken by id again.
        next = heard.next();
        await other.write('named', request.token, {
          now: Date.now(),
          entries: [],
          release: { wakeAt: Date.now(), waits: [], signalCursor: 0 },
        });
        await next;
        expect(named).toEqual(['ahead', 'named', 'named']);
        const later = Date.now();
        const again = await listening.claim({
          ...request,
          now: later,
          leaseUntil: later + 60_000,
          token: randomUUID(),
          ids: ['named'],
        });
        expect(again.instances.map((i) => i.id)).toEqual(['named']);
        expect((await listening.claim({ ...request, token: randomUUID() })).instances.map((i) => i.id)).toEqual([
          'ahead',
        ]);
        // Starts created together (one statement) name no instance.
        next = heard.next();
        await Promise.all([
          other.create(instance('b1', { now: Date.now() })),
          other.create(instance('b2', { now: Date.now() })),
        ]);
        await next;
        expect(named.slice(3)).toEqual([undefined]);
      } finally {
        await stop();
        await listening.close();
      }
    });

    it('sends ends on a channel of their own, which a store LISTENs to only while listenForEnds() has a listener', async () => {
      const other = await migrated();
      const { pool: own, recording, sent, received } = recordingPool();
      const listening = new PostgresWorkflowStore({ executor: fromPg(recording), schema: other.schema });
      const endsChannel = `${other.schema}_wake_ended`;
      const finish = async (id: string) => {
        await other.create(instance(id));
        const { token, cursor } = await lease(other, id);
        await other.write(id, token, {
          now: T + 1,
          entries: [],
          status: 'completed',
          output: id,
          release: { wakeAt: null, waits: [], signalCursor: cursor },
        });
      };
      const wakeUps = calls();
      /** A wake-up sent after everything before it: once heard, any earlier notification has arrived too. */
      const sync = async (id: string) => {
        const next = wakeUps.next();
        await other.create(instance(id, { now: Date.now() }));
        await next;
      };
      try {
        await listening.listen(wakeUps.listener);
        await finish('unawaited');
        await sync('sync-1');
        // Nobody waits for an end: the connection that listens for wake-ups received none, on any channel.
        const ends = () => received.filter((r) => r.payload.endsWith('awaited') && !r.payload.startsWith('due:'));
        expect(ends()).toEqual([]);

        const ended: Array<string | null> = [];
        const stopEnds = await listening.listenForEnds((id) => ended.push(id));
        await other.create(instance('awaited'));
        expect(await listening.requestEndNotice('awaited', T)).toBe(true);
        await finish('awaited');
        await vi.waitFor(() => expect(ended).toEqual(['awaited']));
        await stopEnds();
        // Unlistened a moment after the last listener left; the wake-ups go on on the same connection.
        await vi.waitFor(() => expect(sent).toContain(`UNLISTEN "${endsChannel}"`), { timeout: 5_000 });
        await finish('unawaited-again');
        await sync('sync-2');
        expect(ends()).toEqual([{ channel: endsChannel, payload: 'awaited' }]);
        expect(ended).toEqual(['awaited']);
        expect(own.totalCount - own.idleCount).toBe(1);
      } finally {
        await listening.close();
        await own.end();
      }
    });

    it('an ask on an instance due and free names it on the wake-up channel again; on a leased or sleeping one it sends nothing', async () => {
      // The ask holds the row for a moment and claims pass over held rows (SKIP LOCKED): a worker
      // whose claim by id met the ask's lock would otherwise keep the instance waiting for the poll.
      const store = new PostgresWorkflowStore({ executor: fromPg(pool), schema: schema() });
      await store.init();
      const listener = await pool.connect();
      const heard: string[] = [];
      listener.on('notification', (message) => heard.push(message.payload ?? ''));
      await listener.query(`LISTEN "${store.schema}_wake"`);
      const sync = async (marker: string) => {
        await pool.query('SELECT pg_notify($1, $2)', [`${store.schema}_wake`, marker]);
        await vi.waitFor(() => expect(heard).toContain(marker));
      };
      try {
        await store.create(instance('leased'));
        await lease(store, 'leased');
        await store.create(instance('due'));
        await store.create(instance('sleeping', { wakeAt: T + 60_000 }));
        await sync('m1');
        heard.length = 0;
        expect(await store.requestEndNotice('leased', T)).toBe(true);
        expect(await store.requestEndNotice('sleeping', T)).toBe(true);
        expect(await store.requestEndNotice('due', T)).toBe(true);
        await sync('m2');
        expect(heard).toEqual(['due:due', 'm2']);
        // The sleeping one, once its time came, is named as well.
        expect(await store.requestEndNotice('sleeping', T + 60_000)).toBe(true);
        await sync('m3');
        expect(heard).toEqual(['due:due', 'm2', 'due:sleeping', 'm3']);
      } finally {
        listener.release();
      }
    });

    it('notifies an end only when requestEndNotice() asked for it while the instance was unfinished, alone or in a batch', async () => {
      const statements: string[] = [];
      const counting: PgPoolLike = {
        query: (text, values) => (
          statements.push(typeof text === 'string' ? text : text.text),
          pool.query(text as string, values)
        ),
        connect: () => pool.connect(),
      };
      const store = new PostgresWorkflowStore({ executor: fromPg(counting), schema: schema() });
      await store.init();
      const endsChannel = `${store.schema}_wake_ended`;
      // A plain LISTEN on the ends' channel, as any process could hold: it hears whatever is sent.
      const listener = await pool.connect();
      const heard: string[] = [];
      listener.on('notification', (message) => heard.push(message.payload ?? ''));
      await listener.query(`LISTEN "${endsChannel}"`);
      /** A marker sent after everything before it: once heard, every earlier notification has arrived. */
      const sync = async (marker: string) => {
        await pool.query('SELECT pg_notify($1, $2)', [endsChannel, marker]);
        await vi.waitFor(() => expect(heard).toContain(marker));
      };
      const finishAll = async (ids: string[]) => {
        const leases = [];
        for (const id of ids) leases.push({ id, ...(await lease(store, id)) });
        const written = await Promise.all(
          leases.map(({ id, token, cursor }) =>
            store.write(id, token, {
              now: T + 1,
              entries: [],
              status: 'completed',
              output: id,
              release: { wakeAt: null, waits: [], signalCursor: cursor },
            }),
          ),
        );
        expect(written).toEqual(ids.map(() => true));
      };
      try {
        await store.create(instance('alone'));
        await finishAll(['alone']);
        await sync('m1');
        // Nobody asked: the end sent nothing, even to a session LISTENing on the channel.
        expect(heard).toEqual(['m1']);

        expect(await store.requestEndNotice('unknown', T)).toBe(false);
        await store.create(instance('asked'));
        expect(await store.requestEndNotice('asked', T)).toBe(true);
        expect(await store.requestEndNotice('asked', T)).toBe(true);
        await finishAll(['asked']);
        await sync('m2');
        expect(heard).toEqual(['m1', 'asked', 'm2']);
        // Asked once it ended: nothing will come, and the caller is told to read it.
        expect(await store.requestEndNotice('asked', T)).toBe(false);

        // Ends written together in one batched statement notify the asked one only.
        await Promise.all(['b1', 'b2', 'b3'].map((id) => store.create(instance(id))));
        expect(await store.requestEndNotice('b2', T)).toBe(true);
        statements.length = 0;
        await finishAll(['b1', 'b2', 'b3']);
        expect(statements.filter((sql) => sql.includes('WITH ORDINALITY AS r(id, token'))).toHaveLength(1);
        await sync('m3');
        expect(heard).toEqual(['m1', 'asked', 'm2', 'b2', 'm3']);

        // A retry clears the ask: the next end, which nobody asked for, sends nothing.
        expect(
          await store.reopen('asked', {
            expect: { status: 'completed', runs: 1 },
            status: 'pending',
            error: null,
            entries: [],
            now: T,
          }),
        ).toBe(true);
        await finishAll(['asked']);
        await sync('m4');
        expect(heard).toEqual(['m1', 'asked', 'm2', 'b2', 'm3', 'm4']);
      } finally {
        listener.release();
      }
    });

    it('reconnects after its LISTEN connection is terminated, then hears notifications again', async () => {
      const application = `nwf-listen-${randomUUID().slice(0, 8)}`;
      const own = createPool({ max: 3, application_name: application });
      try {
        const listening = await migrated({ pool: own });
        const other = new PostgresWorkflowStore({ executor: fromPg(pool), schema: listening.schema });
        const heard = calls();
        await listening.listen(heard.listener);
        const killed = await pool.query(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`,
          [application],
        );
        expect(killed.rows).toEqual([{ done: true }]);
        // Reconnected: the listener hears once for what it may have missed.
        await heard.next();
        const next = heard.next();
        await other.create(instance('after', { now: Date.now() }));
        await next;
        await listening.close();
      } finally {
        await own.end();
      }
    });
  });

  describe('nest-workflows', () => {
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await cli(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
      return { code, out: out.join('\n'), err: err.join('\n') };
    };
    const url = `postgres://${pgConnection.user}@${pgConnection.host}:${pgConnection.port}/${pgConnection.database}`;

    it('migrate --postgres <url> --schema <s> migrates, then finds the schema up to date', async () => {
      const name = schema();
      expect(await run('migrate', '--postgres', url, '--schema', name)).toMatchObject({
        code: 0,
        out: expect.stringContaining('applied 0001_init'),
      });
      expect(await run('migrate', `--postgres=${url}`, `--schema=${name}`)).toMatchObject({
        code: 0,
        out: expect.stringContaining('up to date'),
      });
      await new PostgresWorkflowStore({ executor: fromPg(pool), schema: name, migrate: false }).init();
    });

    it('sql --postgres prints the migration SQL for the schema', async () => {
      const result = await run('sql', '--postgres', '--schema', 'order');
      expect(result.code).toBe(0);
      expect(result.out).toBe(PostgresWorkflowStore.migrationSql('order').trimEnd());
      expect(result.out).toContain('CREATE TABLE "order".instances');
    });

    it('explains usage mistakes and failures', async () => {
      expect(await run('migrate')).toMatchObject({
        code: 2,
        err: expect.stringContaining('needs a database: --postgres'),
      });
      expect(await run('launch')).toMatchObject({ code: 2, err: expect.stringContaining('Unknown command "launch"') });
      expect(await run('sql', '--postgres', '--schema', 'Bad')).toMatchObject({
        code: 1,
        err: expect.stringContaining('invalid schema name "Bad"'),
      });
      expect(
        await run('migrate', '--postgres', `postgres://${pgConnection.user}@${pgConnection.host}:1/x`),
      ).toMatchObject({
        code: 1,
        err: expect.stringContaining('could not reach the PostgreSQL server'),
      });
      expect((await run('--help')).out).toContain('nest-workflows migrate --postgres <url>');
    });
  });
});
