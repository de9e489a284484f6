import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main as cli } from '../../src/cli/index.js';
import {
  fromMysql2,
  MYSQL_KEY_LIMITS,
  MySqlWorkflowStore,
  WorkflowSchemaError,
  type SqlExecutor,
} from '../../src/mysql/index.js';
import { topicHash } from '../../src/mysql/mysql-locks.js';
import { isLockContention, retryOnLockContention } from '../../src/mysql/mysql-retry.js';
import { MIGRATIONS } from '../../src/mysql/migrations.generated.js';
import { migrationLabel } from '../../src/sql/migration-runner.js';
import { migrationStatements } from '../../src/mysql/mysql-migrations.js';
import {
  BASE_TIME as T,
  claimRequest,
  details,
  journalEntry,
  lease,
  newInstance,
  newSignal,
  settle,
  testScope,
} from '../../src/testing/store-fixtures.js';
import {
  commonGroundOnly,
  createMysqlPool,
  dropTables,
  freshPrefix,
  mysqlConnection,
  requireMysql,
  useMysqlStore,
} from '../support/mysql.js';
import { lockWaits } from '../support/mysql-lock-waits.js';

/** Every migration this package ships, as `migrate()` reports them. */
const LABELS = MIGRATIONS.map(migrationLabel);

const available = await requireMysql('MySqlWorkflowStore');

/** A string of `length` characters of 4 bytes each in UTF-8 (the worst case for an index). */
const wide = (length: number, seed = 'a') => `${seed}${'😀'.repeat(length - 1)}`;

describe.skipIf(!available)('MySqlWorkflowStore', () => {
  const fixture = useMysqlStore('store', { beforeAll, afterAll }, 6);

  describe('key limits', () => {
    it('keeps keys at exactly the limits, in 4-byte characters, and round-trips them', async () => {
      const { store } = fixture;
      const s = testScope();
      const id = wide(MYSQL_KEY_LIMITS.instanceId, 'i');
      const workflow = wide(MYSQL_KEY_LIMITS.workflow, 'w');
      const entryName = wide(MYSQL_KEY_LIMITS.journalName, 'j');
      const name = wide(MYSQL_KEY_LIMITS.signal, 's');
      const key = wide(MYSQL_KEY_LIMITS.signalKey, 'k');
      const init = newInstance(id, workflow, {
        concurrencyKey: wide(MYSQL_KEY_LIMITS.concurrencyKey, 'c'),
        rateLimitKey: wide(MYSQL_KEY_LIMITS.rateLimitKey, 'r'),
        parentId: wide(MYSQL_KEY_LIMITS.instanceId, 'p'),
        scheduleId: wide(MYSQL_KEY_LIMITS.scheduleId, 'd'),
      });
      const { token, cursor } = await lease(store, init);
      expect(
        await store.write(id, token, {
          now: init.now,
          entries: [journalEntry(entryName)],
          status: 'suspended',
          release: { wakeAt: null, waits: [{ name, key }], signalCursor: cursor },
        }),
      ).toBe(true);
      const sent = await store.signal(newSignal(name, { key, dedupeId: wide(MYSQL_KEY_LIMITS.dedupeId, 'x') }));
      expect(sent).toMatchObject({ created: true, woken: 1, key });
      const stored = await details(store, id);
      expect(stored).toMatchObject({
        id,
        workflow,
        waits: [{ name, key }],
        concurrencyKey: init.concurrencyKey,
        scheduleId: init.scheduleId,
      });
      expect(stored.journal!.map((entry) => entry.name)).toEqual([entryName]);
      expect((await store.signals({ name, key, afterId: 0, upToId: sent.id })).map((r) => r.id)).toEqual([sent.id]);
      void s;
    });

    it('refuses one character over any limit with a RangeError naming the field, before anything is written', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const over = (limit: number) => 'x'.repeat(limit + 1);
      const count = async () => {
        const [rows] = await pool.query(
          `SELECT (SELECT COUNT(*) FROM \`${fixture.schema}_instances\`) + (SELECT COUNT(*) FROM \`${fixture.schema}_signals\`) AS n`,
        );
        return Number((rows as Array<{ n: number }>)[0]!.n);
      };
      const before = await count();
      await expect(store.create(newInstance(over(MYSQL_KEY_LIMITS.instanceId), s.workflow))).rejects.toThrow(
        /instance id is 256 characters.*at most 255/,
      );
      await expect(store.create(newInstance(s.id('a'), over(MYSQL_KEY_LIMITS.workflow)))).rejects.toThrow(
        /workflow name/,
      );
      await expect(store.create(newInstance(s.id('a'), s.workflow, { concurrencyKey: over(255) }))).rejects.toThrow(
        /concurrency key/,
      );
      await expect(store.signal(newSignal(over(MYSQL_KEY_LIMITS.signal)))).rejects.toThrow(RangeError);
      await expect(store.signal(newSignal(s.signal('n'), { key: over(MYSQL_KEY_LIMITS.signalKey) }))).rejects.toThrow(
        /signal key/,
      );
      await expect(
        store.signal(newSignal(s.signal('n'), { dedupeId: over(MYSQL_KEY_LIMITS.dedupeId) })),
      ).rejects.toThrow(/dedupe id/);
      const { token, cursor } = await lease(store, newInstance(s.id('b'), s.workflow));
      const afterLease = await store.get(s.id('b'), { journal: true });
      await expect(
        store.write(s.id('b'), token, {
          now: 1,
          entries: [journalEntry(over(MYSQL_KEY_LIMITS.journalName))],
          status: 'completed',
        }),
      ).rejects.toThrow(/journal entry name/);
      await expect(
        store.write(s.id('b'), token, {
          now: 1,
          entries: [journalEntry('ok')],
          status: 'suspended',
          release: { wakeAt: null, waits: [{ name: s.signal('w'), key: over(255) }], signalCursor: cursor },
        }),
      ).rejects.toThrow(/signal key/);
      expect(await store.get(s.id('b'), { journal: true })).toEqual(afterLease);
      expect(await count()).toBe(before + 1);
    });
  });

  it('round-trips payloads exactly: key order, nulls, unicode, large text', async () => {
    const { store } = fixture;
    const s = testScope();
    const input = { z: 1, a: null, m: { y: [1, { c: '😀', b: '\u0001\u2028' }], x: 'ä' }, big: 'é'.repeat(300_000) };
    const { instance } = await store.create(newInstance(s.id('p'), s.workflow, { input }));
    expect(JSON.stringify(instance.input)).toBe(JSON.stringify(input));
    expect(JSON.stringify((await store.get(s.id('p')))!.input)).toBe(JSON.stringify(input));
  });

  it('a lone create answers the signal cursor it stored, with signals inserted meanwhile and sessions whose auto_increment steps by 7 from 3', async () => {
    const s = testScope();
    const pool = createMysqlPool({ connectionLimit: 4 });
    // Every session of this pool allocates AUTO_INCREMENT ids 3, 10, 17...: the signals' ids
    // (the cursor is the last of them) and nothing of the instances, which have none.
    pool.on('connection', (connection) => {
      connection.query('SET SESSION auto_increment_increment = 7, SESSION auto_increment_offset = 3');
    });
    const holder = await pool.getConnection();
    try {
      const store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: fixture.schema });
      const tick = (dedupeId: string) => newSignal(s.signal('tick'), { dedupeId });
      const sent: number[] = [];
      const answers = [];
      // One at a time: each is a batch of one (the INSERT IGNORE whose insert id is the cursor),
      // sent together with a signal; which of the two the server takes first is left to it. Each
      // pair starts once the one before it settled, so create i + 1 comes after signal i committed
      // and before signal i + 1 was sent: the cursors climb with the signals whatever the timing.
      for (let i = 0; i < 30; i++) {
        const [answer, signal] = await Promise.all([
          store.create(newInstance(s.id(`c${i}`), s.workflow)),
          store.signal(tick(`tick-${i}`)),
        ]);
        answers.push(answer);
        sent.push(signal.id);
      }
      // And one create under a signal in flight: its id allocated, its transaction open. The signal
      // commits only once the create waits for it, or the create answered without waiting.
      await holder.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await holder.beginTransaction();
      sent.push((await store.signalInTransaction(holder, tick('in-flight'))).id);
      let settled = false;
      const meanwhile = store.create(newInstance(s.id('meanwhile'), s.workflow)).finally(() => (settled = true));
      // Awaited below; when the poll throws first, its failure is the one reported.
      meanwhile.catch(() => undefined);
      try {
        for (
          const deadline = Date.now() + 10_000;
          !settled && !(await lockWaits(fixture.pool)).some((trx) => trx.includes(`${fixture.schema}_`));
        ) {
          if (Date.now() > deadline) throw new Error('the create neither waited for the signal in flight nor answered');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      } finally {
        await holder.commit();
      }
      answers.push(await meanwhile);
      expect(sent).toHaveLength(31);
      expect(sent.every((id) => id % 7 === 3)).toBe(true);
      expect(new Set(answers.map(({ instance }) => instance.signalCursor)).size).toBeGreaterThan(1);
      for (const { instance, created } of answers) {
        expect(created).toBe(true);
        const { waits: _waits, ...stored } = (await store.get(instance.id))!;
        expect(instance).toStrictEqual(stored);
      }
    } finally {
      holder.release();
      await pool.end();
    }
  });

  it('creates made together: new ids are created, existing ones returned as stored, repeats answered once', async () => {
    const { store } = fixture;
    const s = testScope();
    await store.create(newInstance(s.id('old'), s.workflow, { input: { first: true } }));
    const inits = [s.id('a'), s.id('old'), s.id('b'), s.id('a')].map((id) =>
      newInstance(id, s.workflow, { input: { again: id } }),
    );
    const results = await Promise.all(inits.map((init) => store.create(init)));
    expect(results.map((r) => r.created)).toEqual([true, false, true, false]);
    expect(results[1]!.instance.input).toEqual({ first: true });
    expect(results[3]!.instance.input).toEqual({ again: s.id('a') });
    const fresh = await Promise.all([s.id('c'), s.id('d')].map((id) => store.create(newInstance(id, s.workflow))));
    expect(fresh.map((r) => r.created)).toEqual([true, true]);
  });

  for (const mariadb of [true, false]) {
    it(`creates made together answer each new instance exactly as stored, its signal cursor included (${mariadb ? 'MariaDB' : 'common ground'})`, async () => {
      const store = new MySqlWorkflowStore({
        executor: mariadb ? fromMysql2(fixture.pool) : commonGroundOnly(fromMysql2(fixture.pool)),
        schema: fixture.schema,
      });
      await store.init();
      try {
        const s = testScope();
        // Signals before the creates: each new instance's cursor is the last signal id, not 0.
        for (const name of ['x', 'y']) await store.signal(newSignal(s.signal(name)));
        const lease = { owner: 'worker-1', token: `t-${s.id('leased')}`, leaseUntil: T + 30_000 };
        const inits = [
          newInstance(s.id('plain'), s.workflow),
          newInstance(s.id('leased'), s.workflow, { lease }),
          newInstance(s.id('later'), s.workflow, {
            wakeAt: T + 60_000,
            priority: 3,
            concurrencyKey: 'k',
            input: { nested: { a: [1, null] } },
          }),
        ];
        const results = await Promise.all(inits.map((init) => store.create(init)));
        expect(results.map((result) => result.created)).toEqual([true, true, true]);
        for (const { instance } of results) {
          const { waits: _waits, journal: _journal, ...stored } = (await store.get(instance.id))!;
          expect(instance, instance.id).toEqual(stored);
          expect(instance.signalCursor, instance.id).toBeGreaterThan(0);
        }
      } finally {
        await store.close();
      }
    });
  }

  // As on this MariaDB (each batch one round trip), and as on MySQL 8.0 (see MySqlServerFeatures).
  for (const mariadb of [true, false]) {
    describe(`writes made together (${mariadb ? 'MariaDB: one round trip a batch' : 'common ground of MySQL 8.0 and MariaDB'})`, () => {
      /** `fromMysql2(pool)` for this mode. */
      const modeExecutor = () => (mariadb ? fromMysql2(fixture.pool) : commonGroundOnly(fromMysql2(fixture.pool)));
      const opened: MySqlWorkflowStore[] = [];
      // Each gives back the pool connection it keeps between its transactions.
      afterEach(async () => {
        for (const store of opened.splice(0)) await store.close();
      });
      /** A started store (`init()` found what the server offers) on the fixture's tables, closed after the test. */
      async function started(executor: SqlExecutor) {
        const store = new MySqlWorkflowStore({ executor, schema: fixture.schema });
        opened.push(store);
        await store.init();
        return store;
      }

      /** A started store on the fixture's tables whose executor counts statements and transactions. */
      async function countingStore() {
        const counts = { statements: 0, transactions: 0 };
        const executor = modeExecutor();
        const counting: SqlExecutor = {
          query: (sql, params, options) => (counts.statements++, executor.query(sql, params, options)),
          transaction: (fn, options) => (
            counts.transactions++,
            executor.transaction(
              (tx) =>
                fn({
                  ...tx,
                  query: (sql, params, queryOptions) => (counts.statements++, tx.query(sql, params, queryOptions)),
                }),
              options,
            )
          ),
          close: () => executor.close?.(),
        };
        return { store: await started(counting), counts };
      }

      it('journal entries alone: each write lands only under its own lease, in one statement (in a transaction when several), entries in order', async () => {
        const { store, counts } = await countingStore();
        const s = testScope();
        const ids = ['a', 'b', 'c', 'd'].map(s.id);
        const tokens: string[] = [];
        for (const [i, id] of ids.entries())
          tokens.push((await lease(store, newInstance(id, `${s.workflow}-${i}`))).token);
        // `a` has an entry already, which the batch replaces: its row counts twice in the answer.
        expect(await store.write(ids[0]!, tokens[0]!, { now: T + 1, entries: [journalEntry('x')] })).toBe(true);
        Object.assign(counts, { statements: 0, transactions: 0 });
        const entries = (i: number) => [journalEntry('x', { value: `new-${i}` }), journalEntry('z'), journalEntry('y')];
        const results = await Promise.all(
          ids.map((id, i) =>
            store.write(id, i === 2 ? 'not-the-lease' : tokens[i]!, { now: T + 2, entries: entries(i) }),
          ),
        );
        expect(results).toEqual([true, true, false, true]);
        // MariaDB: one INSERT ... SELECT ... RETURNING, committing on its own. Otherwise one
        // INSERT ... SELECT, and a read of the tokens since one write did not land, in one
        // transaction (the rows of the writes that landed stay locked until they are read).
        expect(counts).toEqual(mariadb ? { statements: 1, transactions: 0 } : { statements: 2, transactions: 1 });
        for (const [i, id] of ids.entries()) {
          const journal = (await details(store, id)).journal!;
          expect(
            journal.map((entry) => [entry.name, entry.value]),
            id,
          ).toEqual(
            i === 2
              ? []
              : [
                  ['x', `new-${i}`],
                  ['z', { result: 'z' }],
                  ['y', { result: 'y' }],
                ],
          );
        }

        Object.assign(counts, { statements: 0, transactions: 0 });
        const landed = await Promise.all(
          [0, 1, 3].map((i) => store.write(ids[i]!, tokens[i]!, { now: T + 3, entries: [journalEntry('w')] })),
        );
        expect(landed).toEqual([true, true, true]);
        expect(counts).toEqual(mariadb ? { statements: 1, transactions: 0 } : { statements: 1, transactions: 1 });
        // A lone write is the statement alone, committing on its own.
        Object.assign(counts, { statements: 0, transactions: 0 });
        expect(await store.write(ids[0]!, tokens[0]!, { now: T + 3, entries: [journalEntry('v')] })).toBe(true);
        expect(counts).toEqual({ statements: 1, transactions: 0 });
        expect(await store.write(ids[2]!, 'not-the-lease', { now: T + 4, entries: [journalEntry('w')] })).toBe(false);
        expect((await details(store, ids[2]!)).journal).toEqual([]);
        await store.close();
      });

      it('journal entries alone: a write that landed answers true even when its lease is taken right after the statement', async () => {
        const s = testScope();
        const ids = ['a', 'b'].map(s.id);
        // `a` leased until T + 30 s (then lapsed, so a claim at T + 60 s takes it over); `b` with a stale token.
        const tokens = [];
        for (const [i, id] of ids.entries())
          tokens.push((await lease(fixture.store, newInstance(id, `${s.workflow}-${i}`))).token);
        let takeover: Promise<unknown> | null = null;
        const executor = modeExecutor();
        // Right after the batch's journal statement answered, another worker tries to take `a` over
        // (its claim skips a row locked by a transaction still open).
        const racingQuery =
          (run: SqlExecutor['query']): SqlExecutor['query'] =>
          async (sql, params) => {
            const result = await run(sql, params);
            // The batch's INSERT ... SELECT of the journal, whichever shape it takes.
            if (takeover === null && /^INSERT INTO \S+_journal` .* FOR UPDATE /s.test(sql)) {
              takeover = fixture.store.claim(claimRequest(`${s.workflow}-0`, { now: T + 60_000, limit: 1 }));
              await takeover;
            }
            return result;
          };
        const racing: SqlExecutor = {
          query: racingQuery((sql, params) => executor.query(sql, params)),
          transaction: (fn, options) =>
            executor.transaction(
              (tx) => fn({ ...tx, query: racingQuery((sql, params) => tx.query(sql, params)) }),
              options,
            ),
          close: () => executor.close?.(),
        };
        const store = await started(racing);
        const results = await Promise.all([
          store.write(ids[0]!, tokens[0]!, { now: T + 2, entries: [journalEntry('mine')] }),
          store.write(ids[1]!, 'not-the-lease', { now: T + 2, entries: [journalEntry('mine')] }),
        ]);
        expect(takeover).not.toBeNull();
        // `a`'s entry is in its journal: the write landed under its lease, so it must answer true
        // (false says that nothing was written).
        expect((await details(store, ids[0]!)).journal!.map((entry) => entry.name)).toEqual(['mine']);
        expect((await details(store, ids[1]!)).journal).toEqual([]);
        expect(results).toEqual([true, false]);
      });

      it("writes of one claim's instances (one token) made together: the one taken over since writes nothing and answers false", async () => {
        const s = testScope();
        const ids = ['a', 'b', 'c'].map(s.id);
        for (const id of ids) await fixture.store.create(newInstance(id, s.workflow));
        const request = claimRequest(s.workflow, { limit: 3 });
        expect((await fixture.store.claim(request)).instances.map((instance) => instance.id)).toEqual(ids);
        // `a` and `c` renewed; `b`'s lease lapses, and another claim takes it over.
        for (const id of [ids[0]!, ids[2]!])
          expect(await fixture.store.renew(id, request.token, T + 120_000)).not.toBeNull();
        const takeover = await fixture.store.claim(claimRequest(s.workflow, { now: T + 60_000, limit: 3 }));
        expect(takeover.instances.map((instance) => instance.id)).toEqual([ids[1]]);
        const executor = modeExecutor();
        const sent: string[] = [];
        const seen = (sql: string) => sent.push(sql);
        const store = await started({
          query: (sql, params) => (seen(sql), executor.query(sql, params)),
          transaction: (fn, options) =>
            executor.transaction(
              (tx) => fn({ ...tx, query: (sql, params) => (seen(sql), tx.query(sql, params)) }),
              options,
            ),
          close: () => executor.close?.(),
        });
        const steps = await Promise.all(
          ids.map((id) => store.write(id, request.token, { now: T + 2, entries: [journalEntry('step')] })),
        );
        expect(steps).toEqual([true, false, true]);
        // Two entries each: the batch takes the other shape of statement, with the same outcome.
        const pairs = await Promise.all(
          ids.map((id) =>
            store.write(id, request.token, { now: T + 2, entries: [journalEntry('x'), journalEntry('y')] }),
          ),
        );
        expect(pairs).toEqual([true, false, true]);
        const ends = await Promise.all(
          ids.map((id) =>
            store.write(id, request.token, {
              now: T + 3,
              entries: [journalEntry('end')],
              status: 'completed',
              output: { done: id },
              release: { wakeAt: null, waits: [], signalCursor: 0 },
            }),
          ),
        );
        expect(ends).toEqual([true, false, true]);
        // Each batch was fenced by the one token they share (on MariaDB, the ending batch's UPDATE in a compound statement).
        expect(
          sent.filter((sql) =>
            /^(BEGIN NOT ATOMIC\b.*?)?(INSERT INTO|UPDATE) .*FORCE INDEX \(PRIMARY\) .*lease_token = \?/s.test(sql),
          ),
        ).toHaveLength(2);
        for (const id of [ids[0]!, ids[2]!]) {
          const found = await details(fixture.store, id);
          expect([found.status, found.output, found.leaseToken, found.journal!.map((entry) => entry.name)]).toEqual([
            'completed',
            { done: id },
            null,
            ['step', 'x', 'y', 'end'],
          ]);
        }
        const taken = await details(fixture.store, ids[1]!);
        expect([taken.status, taken.output, taken.leaseToken, taken.journal]).toEqual([
          'running',
          null,
          takeover.instances[0]!.leaseToken,
          [],
        ]);
      });

      it('with changes to the instances: fenced by one UPDATE in one transaction; a lost lease changes nothing', async () => {
        const { store, counts } = await countingStore();
        const s = testScope();
        const ids = ['a', 'b', 'c'].map(s.id);
        const tokens: string[] = [];
        for (const [i, id] of ids.entries())
          tokens.push((await lease(store, newInstance(id, `${s.workflow}-${i}`))).token);
        const before = await details(store, ids[1]!);
        Object.assign(counts, { statements: 0, transactions: 0 });
        const results = await Promise.all([
          store.write(ids[0]!, tokens[0]!, {
            now: T + 5,
            entries: [journalEntry('last')],
            status: 'completed',
            output: { done: 0 },
            release: { wakeAt: null, waits: [], signalCursor: 0 },
          }),
          store.write(ids[1]!, 'not-the-lease', {
            now: T + 5,
            entries: [journalEntry('last')],
            status: 'completed',
            output: { done: 1 },
          }),
          store.write(ids[2]!, tokens[2]!, { now: T + 5, entries: [journalEntry('only')] }),
        ]);
        expect(results).toEqual([true, false, true]);
        const written = { ...counts };
        expect(await details(store, ids[0]!)).toMatchObject({
          status: 'completed',
          output: { done: 0 },
          leaseToken: null,
          wakeAt: null,
          updatedAt: T + 5,
        });
        expect(await details(store, ids[1]!)).toEqual(before);
        expect(await details(store, ids[2]!)).toMatchObject({
          status: 'running',
          leaseToken: tokens[2],
          journal: [expect.objectContaining({ name: 'only' })],
        });
        // The fenced UPDATE matched two rows of three: it is rolled back, and the rows locked and read
        // (on MariaDB the compound statement rolled back its own transaction: the second is the only one).
        expect(written.transactions).toBe(mariadb ? 1 : 2);

        Object.assign(counts, { statements: 0, transactions: 0 });
        const more = ['d', 'e'].map(s.id);
        const moreTokens: string[] = [];
        for (const [i, id] of more.entries())
          moreTokens.push((await lease(store, newInstance(id, `${s.workflow}-more-${i}`))).token);
        Object.assign(counts, { statements: 0, transactions: 0 });
        const both = await Promise.all(
          more.map((id, i) =>
            store.write(id, moreTokens[i]!, { now: T + 6, entries: [journalEntry('end')], status: 'completed' }),
          ),
        );
        expect(both).toEqual([true, true]);
        // The fenced UPDATE and the journal's INSERT, in one transaction: on MariaDB one compound
        // statement, which opens and commits it.
        expect(counts).toEqual(mariadb ? { statements: 1, transactions: 0 } : { statements: 2, transactions: 1 });
        await store.close();
      });

      // MariaDB's compound statements only.
      if (mariadb) {
        it('a compound statement that fails halfway rolls its transaction back before the connection goes back to the pool, and runs again', async () => {
          const s = testScope();
          const id = s.id('a');
          const { token } = await lease(fixture.store, newInstance(id, s.workflow));
          expect(
            await fixture.store.write(id, token, { now: T + 1, entries: [journalEntry('end', { value: 'first' })] }),
          ).toBe(true);
          // One connection, so what the store's statement left on its session is what the checks below see.
          const single = createMysqlPool({ connectionLimit: 1 });
          const blocker = await fixture.pool.getConnection();
          try {
            await single.query('SET SESSION innodb_lock_wait_timeout = 1');
            // Another transaction holds the journal row the ending write replaces: its UPDATE goes
            // through, its journal upsert waits, and InnoDB rolls back that statement alone.
            await blocker.beginTransaction();
            await blocker.query(
              `SELECT seq FROM \`${fixture.schema}_journal\` WHERE instance_id = ? AND name = 'end' FOR UPDATE`,
              [id],
            );
            const executor = fromMysql2(single);
            const after: unknown[] = [];
            const store = await started({
              query: async (sql, params) => {
                try {
                  return await executor.query(sql, params);
                } catch (error) {
                  if ((error as { errno?: number }).errno === 1205 && after.length === 0) {
                    const { rows } = await executor.query(
                      `SELECT @@in_transaction AS open, (SELECT status FROM \`${fixture.schema}_instances\` WHERE id = ?) AS status`,
                      [id],
                    );
                    after.push(rows[0]);
                    await blocker.commit();
                  }
                  throw error;
                }
              },
              transaction: (fn, options) => executor.transaction(fn, options),
              close: () => executor.close?.(),
            });
            const write = {
              now: T + 2,
              entries: [journalEntry('end', { value: 'second' })],
              status: 'completed' as const,
              output: 1,
              release: { wakeAt: null, waits: [], signalCursor: 0 },
            };
            expect(await store.write(id, token, write)).toBe(true);
            // After the timeout: no transaction open, the UPDATE undone; then the retry landed it all.
            expect(after).toEqual([{ open: 0, status: 'running' }]);
            expect(await details(fixture.store, id)).toMatchObject({
              status: 'completed',
              output: 1,
              journal: [expect.objectContaining({ name: 'end', value: 'second' })],
            });
          } finally {
            blocker.destroy();
            await single.end();
          }
        });
      }
    });
  }

  describe('prepared statements (MariaDB)', () => {
    /** The session counters of the pool's one connection. */
    async function sessionStatus(pool: ReturnType<typeof createMysqlPool>) {
      const [rows] = await pool.query(
        "SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute', 'Prepared_stmt_count')",
      );
      return Object.fromEntries(
        (rows as Array<{ Variable_name: string; Value: string }>).map((row) => [row.Variable_name, Number(row.Value)]),
      );
    }

    /** Claims, journal writes and ends of `rounds` instances, one at a time, on a store over a pool of one connection. */
    async function runOn(preparedStatements: number | undefined, rounds: number) {
      const pool = createMysqlPool({ connectionLimit: 1 });
      const store = new MySqlWorkflowStore({
        executor: fromMysql2(pool, preparedStatements === undefined ? {} : { preparedStatements }),
        schema: fixture.schema,
      });
      try {
        await store.init();
        const before = await sessionStatus(pool);
        const s = testScope();
        for (let i = 0; i < rounds; i++) {
          const { token } = await lease(store, newInstance(s.id(`p${i}`), s.workflow));
          expect(await store.write(s.id(`p${i}`), token, { now: T + 1, entries: [journalEntry('one')] })).toBe(true);
          expect(
            await store.write(s.id(`p${i}`), token, {
              now: T + 2,
              entries: [journalEntry('two')],
              release: { wakeAt: null, waits: [], signalCursor: 0 },
              status: 'completed',
              output: i,
            }),
          ).toBe(true);
          const stored = await details(store, s.id(`p${i}`));
          expect([stored.status, stored.output, stored.journal!.map((entry) => entry.name)]).toEqual([
            'completed',
            i,
            ['one', 'two'],
          ]);
        }
        const after = await sessionStatus(pool);
        return {
          executed: after.Com_stmt_execute! - before.Com_stmt_execute!,
          prepared: after.Com_stmt_prepare! - before.Com_stmt_prepare!,
        };
      } finally {
        await store.close();
        await pool.end();
      }
    }

    it('runs the hot path prepared, each text prepared once on the connection, and nothing prepared with preparedStatements: 0', async () => {
      const [{ rows }] = [await fixture.store['executor'].query('SELECT VERSION() AS version')];
      if (!/MariaDB/i.test(String(rows[0]?.version))) return; // MySQL 8.0: the store prepares nothing (see MySqlServerFeatures).
      const on = await runOn(undefined, 8);
      expect(on.executed).toBeGreaterThan(8);
      // The texts of this path, each prepared once (from its third send), however many sends.
      expect(on.prepared).toBeGreaterThan(0);
      expect(on.prepared).toBeLessThanOrEqual(8);
      const capped = await runOn(2, 8);
      expect(capped.prepared).toBeLessThanOrEqual(2);
      expect(await runOn(0, 8)).toEqual({ executed: 0, prepared: 0 });
    });
  });

  it('compares keys byte-wise: ids differing only in case or accents are two instances', async () => {
    const { store } = fixture;
    const s = testScope();
    for (const id of [s.id('order-a'), s.id('Order-A'), s.id('order-ä')]) {
      expect((await store.create(newInstance(id, s.workflow))).created).toBe(true);
    }
  });

  describe('topic locks', () => {
    /**
     * A signal name starting with `base` whose topic (key 'k') sorts in the signals' topic index
     * just before `held`'s, with no stored topic between: a read of its range that went past the
     * range's end would reach `held`'s first entry.
     */
    async function topicJustBefore(base: string, held: string): Promise<string> {
      const limit = topicHash(held, 'k');
      const [rows] = await fixture.pool.query(
        `SELECT MAX(topic_hash) AS below FROM \`${fixture.schema}_signals\` WHERE topic_hash < ?`,
        [limit],
      );
      const below = ((rows as Array<{ below: Buffer | null }>)[0]?.below ?? Buffer.alloc(32)) as Buffer;
      for (let i = 0; ; i++) {
        const hash = topicHash(`${base}-${i}`, 'k');
        if (Buffer.compare(hash, below) > 0 && Buffer.compare(hash, limit) < 0) return `${base}-${i}`;
      }
    }

    it('a signal in an open transaction delays no signal and no suspension, of its topic or another; reads of its topic wait', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const held = s.signal('held');
      const free = await topicJustBefore(s.signal('free'), held);
      const { token, cursor } = await lease(store, newInstance(s.id('b'), s.workflow));
      const connection = await pool.getConnection();
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.beginTransaction();
        const inFlight = await store.signalInTransaction(connection, newSignal(held, { key: 'k' }));
        // Another signal of the same topic, and one of another, go through at once.
        expect((await store.signal(newSignal(held, { key: 'k' }))).created).toBe(true);
        expect((await store.signal(newSignal(free, { key: 'k' }))).created).toBe(true);
        // So does a suspension on the held topic: the signal in flight makes it due now.
        expect(
          await store.write(s.id('b'), token, {
            now: 1,
            entries: [journalEntry('wait')],
            status: 'suspended',
            release: {
              wakeAt: null,
              waits: [
                { name: free, key: 'other' },
                { name: held, key: 'k' },
              ],
              signalCursor: cursor,
            },
          }),
        ).toBe(true);
        expect((await details(store, s.id('b'))).wakeAt).toBe(1);
        expect(await store.signals({ name: free, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toHaveLength(
          1,
        );
        // A read of the held topic waits for the commit, then sees both signals in id order.
        let readDone = false;
        const read = store
          .signals({ name: held, key: 'k', afterId: 0, upToId: Number.MAX_SAFE_INTEGER })
          .then((signals) => ((readDone = true), signals));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(readDone).toBe(false);
        await connection.commit();
        const signals = await read;
        expect(signals).toHaveLength(2);
        expect(signals[0]!.id).toBe(inFlight.id);
      } finally {
        connection.destroy();
      }
    });

    it('refuses a signal in a REPEATABLE READ session before writing anything; a READ COMMITTED one wakes a waiter', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const n = s.signal('rr');
      await settle(store, newInstance(s.id('w'), s.workflow), 'suspended', { waits: [{ name: n, key: null }] });
      const connection = await pool.getConnection();
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
        await connection.beginTransaction();
        await expect(store.signalInTransaction(connection, newSignal(n, { now: 5 }))).rejects.toThrow(
          /needs a READ COMMITTED transaction.*REPEATABLE-READ/,
        );
        await connection.commit();
        expect(await store.signals({ name: n, key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER })).toEqual([]);
        expect((await details(store, s.id('w'))).wakeAt).toBeNull();
      } finally {
        connection.destroy();
      }
    });
  });

  describe('in the application transaction', () => {
    it('calls made together on one transaction run one at a time: one that fails undoes all of itself and nothing of a start that already answered', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const connection = await pool.getConnection();
      let released!: () => void;
      const createReleased = new Promise<void>((resolve) => (released = resolve));
      let held = false;
      // The application's transaction as a SqlExecutor over its connection. The signal's wake-up
      // (after its row went in) waits for the start to have answered (its RELEASE done), then fails
      // (a lock wait timeout, say): the signal must roll back to its own savepoint, its row with it.
      const handle: SqlExecutor = {
        async query(sql, params) {
          if (!held && sql.startsWith('UPDATE') && sql.includes('_waits')) {
            held = true;
            await createReleased;
            throw new Error('the signal failed after its savepoint');
          }
          const [result] = await connection.query(sql, (params ?? []) as unknown[]);
          if (sql.startsWith('RELEASE')) released();
          return Array.isArray(result)
            ? { rows: result as Array<Record<string, unknown>>, rowCount: result.length }
            : {
                rows: [],
                rowCount: (result as { affectedRows: number }).affectedRows,
                insertId: (result as { insertId: number }).insertId,
              };
        },
        transaction: (fn) => fn(handle),
      };
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.beginTransaction();
        const [started, sent] = await Promise.allSettled([
          store.createInTransaction(handle, newInstance(s.id('together'), s.workflow)),
          store.signalInTransaction(handle, newSignal(s.signal('fails-together'))),
        ]);
        expect(sent.status).toBe('rejected');
        expect(started).toMatchObject({ status: 'fulfilled', value: { created: true } });
        // The application goes on with its transaction and commits: the start it was told of is there.
        await connection.commit();
        expect(await store.get(s.id('together'))).toMatchObject({ status: 'pending' });
        expect(
          await store.signals({
            name: s.signal('fails-together'),
            key: null,
            afterId: 0,
            upToId: Number.MAX_SAFE_INTEGER,
          }),
        ).toEqual([]);
      } finally {
        connection.destroy();
      }
    });

    it('commits and rolls back with it', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const connection = await pool.getConnection();
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await connection.beginTransaction();
        const started = await store.createInTransaction(connection, newInstance(s.id('rolled'), s.workflow));
        expect(started.created).toBe(true);
        await store.signalInTransaction(connection, newSignal(s.signal('rolled')));
        await connection.rollback();
        expect(await store.get(s.id('rolled'))).toBeNull();
        expect(
          await store.signals({ name: s.signal('rolled'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
        ).toEqual([]);

        await connection.beginTransaction();
        await store.createInTransaction(connection, newInstance(s.id('kept'), s.workflow));
        expect((await store.createInTransaction(connection, newInstance(s.id('kept'), s.workflow))).created).toBe(
          false,
        );
        await store.signalInTransaction(connection, newSignal(s.signal('kept')));
        expect(await store.get(s.id('kept'))).toBeNull(); // not committed yet
        await connection.commit();
        expect(await store.get(s.id('kept'))).toMatchObject({ status: 'pending' });
        expect(
          await store.signals({ name: s.signal('kept'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
        ).toHaveLength(1);
      } finally {
        connection.destroy();
      }
    });

    for (const isolation of ['READ COMMITTED', 'REPEATABLE READ']) {
      it(`a start in a ${isolation} transaction takes the last signal id as its cursor, as create() does`, async () => {
        const { store, pool } = fixture;
        const s = testScope();
        // Sent before the start: the instance must not take it (its cursor is at or above its id).
        const before = await store.signal(newSignal(s.signal('before')));
        const connection = await pool.getConnection();
        try {
          await connection.query(`SET SESSION TRANSACTION ISOLATION LEVEL ${isolation}`);
          await connection.beginTransaction();
          const started = await store.createInTransaction(connection, newInstance(s.id('started'), s.workflow));
          await connection.commit();
          expect(started.instance.signalCursor).toBe(before.id);
          const { waits: _waits, ...stored } = (await store.get(s.id('started')))!;
          expect(started.instance).toStrictEqual(stored);
        } finally {
          connection.destroy();
        }
      });
    }

    it('a start in a REPEATABLE READ transaction (the default) holds up no signal while that transaction stays open', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const connection = await pool.getConnection();
      const other = await pool.getConnection();
      try {
        await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
        await connection.beginTransaction();
        const started = await store.createInTransaction(connection, newInstance(s.id('open'), s.workflow));
        // Another session stores a signal as signal() does, while the application's transaction is
        // open: reading the last signal id must have locked nothing it needs (it would wait for the commit).
        await other.query('SET SESSION innodb_lock_wait_timeout = 1');
        const [inserted] = await other.query(
          `INSERT IGNORE INTO \`${fixture.schema}_signals\` (name, \`key\`, topic_hash, dedupe_id, payload, created_at) VALUES (?, NULL, ?, NULL, 'null', ?)`,
          [s.signal('meanwhile'), Buffer.alloc(32), T],
        );
        const signalId = (inserted as { insertId: number }).insertId;
        await connection.commit();
        // Sent after the start answered, the signal is above the instance's cursor: its execution sees it.
        expect(started.instance.signalCursor).toBeLessThan(signalId);
        const { waits: _waits, ...stored } = (await store.get(s.id('open')))!;
        expect(started.instance).toStrictEqual(stored);
      } finally {
        connection.destroy();
        other.destroy();
      }
    });

    it('refuses a SqlExecutor that is not in a transaction (one over the pool), leaving nothing of the call', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      const executor = fromMysql2(pool);
      await expect(store.createInTransaction(executor, newInstance(s.id('x'), s.workflow))).rejects.toThrow(
        /not in a transaction/,
      );
      await expect(store.signalInTransaction(executor, newSignal(s.signal('x')))).rejects.toThrow(
        /not in a transaction/,
      );
      expect(await store.get(s.id('x'))).toBeNull();
      expect(
        await store.signals({ name: s.signal('x'), key: null, afterId: 0, upToId: Number.MAX_SAFE_INTEGER }),
      ).toEqual([]);
    });

    it('refuses a pool, or a connection outside a transaction, before writing anything', async () => {
      const { store, pool } = fixture;
      const s = testScope();
      await expect(store.createInTransaction(pool, newInstance(s.id('x'), s.workflow))).rejects.toThrow(
        /is a mysql2 pool/,
      );
      const connection = await pool.getConnection();
      try {
        await expect(store.signalInTransaction(connection, newSignal(s.signal('x')))).rejects.toThrow(
          /not in a transaction/,
        );
        await expect(store.createInTransaction(connection, newInstance(s.id('x'), s.workflow))).rejects.toThrow(
          /not in a transaction/,
        );
      } finally {
        connection.release();
      }
      expect(await store.get(s.id('x'))).toBeNull();
    });
  });

  it('tells a callback pool, a connection and a non-executor apart', () => {
    const { pool } = fixture;
    expect(() => fromMysql2({ query() {}, getConnection() {}, promise() {} } as never)).toThrow(/promise API/);
    expect(() => new MySqlWorkflowStore({ executor: pool as never })).toThrow(
      /wrap it, `executor: fromMysql2\(pool\)`/,
    );
    expect(() => new MySqlWorkflowStore({ executor: fromMysql2(pool), schema: 'Bad' })).toThrow(WorkflowSchemaError);
  });
});

describe.skipIf(!available)('MySQL migrations', () => {
  let pool: ReturnType<typeof createMysqlPool>;
  const schemas: string[] = [];
  beforeAll(() => {
    pool = createMysqlPool({ connectionLimit: 6 });
  });
  afterAll(async () => {
    for (const schema of schemas) await dropTables(pool, schema);
    await pool?.end();
  });
  const fresh = (name = freshPrefix('mig')) => (schemas.push(name), name);
  const tables = async (schema: string) => {
    const [rows] = await pool.query(
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?',
      [`${schema.replaceAll('_', '\\_')}\\_%`],
    );
    return (rows as Array<{ t: string }>).map((row) => row.t).sort();
  };
  const indexes = async (schema: string) => {
    const [rows] = await pool.query(
      'SELECT DISTINCT index_name AS i FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ?',
      [`${schema}_instances`],
    );
    return (rows as Array<{ i: string }>).map((row) => row.i).sort();
  };

  it('migrate once when processes start together, and again finds nothing to do', async () => {
    const schema = fresh();
    const stores = Array.from({ length: 3 }, () => new MySqlWorkflowStore({ executor: fromMysql2(pool), schema }));
    const applied = await Promise.all(stores.map((store) => store.migrate()));
    expect(applied.flat()).toEqual(LABELS);
    expect(await stores[0]!.migrate()).toEqual([]);
    expect(await tables(schema)).toHaveLength(15);
  });

  it('resumes a run stopped halfway after the last recorded statement', async () => {
    const schema = fresh();
    const statements = migrationStatements(MIGRATIONS[0]!.sql.replaceAll('{{schema}}', schema));
    // As a run that created two tables and recorded only the first would leave it.
    await pool.query(
      `CREATE TABLE \`${schema}_migrations\` (version INT NOT NULL, step INT NOT NULL, name VARCHAR(255) NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (version, step))`,
    );
    await pool.query(statements[0]!);
    await pool.query(statements[1]!);
    await pool.query(`INSERT INTO \`${schema}_migrations\` (version, step, name) VALUES (1, 1, 'init')`);
    const store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema, migrate: false });
    await expect(store.init()).rejects.toThrow(new RegExp(`${LABELS.join(', ')} not applied.*migrate --mysql`));
    expect(await store.migrate()).toEqual(LABELS);
    await store.init();
    const [steps] = await pool.query(`SELECT step FROM \`${schema}_migrations\` WHERE version = 1 ORDER BY step`);
    expect((steps as Array<{ step: number }>).map((row) => row.step)).toEqual(
      statements
        .map((_, i) => i)
        .concat(statements.length)
        .slice(0),
    );
  });

  // 0002 adds a column and indexes, which can't say IF NOT EXISTS on MySQL 8.0: a run stopped after
  // one of them ran and before its record must still resume (the runner looks it up first).
  for (const [step, what] of [
    [1, 'the column'],
    [2, 'the first index'],
    [3, 'the last index'],
  ] as const) {
    it(`resumes a run stopped after 0002 added ${what} and before it recorded it`, async () => {
      const schema = fresh();
      const executor = fromMysql2(pool);
      const crashAt = `INSERT INTO \`${schema}_migrations\` (version, step, name) VALUES (?, ?, ?)`;
      let ran: string | null = null;
      const crashing = (inner: typeof executor): typeof executor => ({
        query: async (sql, params) => {
          if (sql === crashAt && params?.[0] === 2 && params[1] === step) throw new Error('stopped before the record');
          if (/^(ALTER TABLE|CREATE INDEX)/.test(sql)) ran = sql;
          return inner.query(sql, params);
        },
        transaction: (fn) => inner.transaction((tx) => fn(crashing(tx))),
      });
      await expect(new MySqlWorkflowStore({ executor: crashing(executor), schema }).migrate()).rejects.toThrow(
        'stopped before the record',
      );
      expect(ran).toBe(migrationStatements(MIGRATIONS[1]!.sql.replaceAll('{{schema}}', schema))[step - 1]);
      const store = new MySqlWorkflowStore({ executor, schema, migrate: false });
      await expect(store.init()).rejects.toThrow(new RegExp(`${LABELS.slice(1).join(', ')} not applied`));
      expect(await store.migrate()).toEqual(LABELS.slice(1));
      await store.init();
      const [steps] = await pool.query(`SELECT step FROM \`${schema}_migrations\` WHERE version = 2 ORDER BY step`);
      expect((steps as Array<{ step: number }>).map((row) => row.step)).toEqual([0, 1, 2, 3]);
      expect(await indexes(schema)).toEqual(
        expect.arrayContaining(['instances_status_created', 'instances_workflow_created']),
      );
      const traceContext = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
      expect((await store.create({ ...newInstance('x', 'w'), traceContext })).instance.traceContext).toEqual(
        traceContext,
      );
    });
  }

  it('resumes a run stopped after 0004 inserted the cancel counter and before it recorded it, with one counter that cancels of leased instances move', async () => {
    const schema = fresh();
    const executor = fromMysql2(pool);
    const crashAt = `INSERT INTO \`${schema}_migrations\` (version, step, name) VALUES (?, ?, ?)`;
    const crashing = (inner: typeof executor): typeof executor => ({
      query: async (sql, params) => {
        if (sql === crashAt && params?.[0] === 4 && params[1] === 2) throw new Error('stopped before the record');
        return inner.query(sql, params);
      },
      transaction: (fn) => inner.transaction((tx) => fn(crashing(tx))),
    });
    await expect(new MySqlWorkflowStore({ executor: crashing(executor), schema }).migrate()).rejects.toThrow(
      'stopped before the record',
    );
    const store = new MySqlWorkflowStore({ executor, schema });
    await store.init();
    const counter = async () => (await pool.query(`SELECT id, seq FROM \`${schema}_cancel_notices\``))[0];
    expect(await counter()).toEqual([{ id: 1, seq: 0 }]);
    // A cancel of an instance nobody leases makes it due (the wake-up poll's marker): not counted. Of a leased one: counted.
    await store.create(newInstance('idle', 'w-idle'));
    await store.create(newInstance('leased', 'w'));
    await store.claim({
      owner: 'o',
      token: 'tok',
      leaseUntil: T + 60_000,
      now: T,
      limit: 1,
      workflows: [{ name: 'w', version: 1 }],
    });
    expect(await store.requestCancel('idle', { reason: 'r', now: T, terminate: false })).toBe(true);
    expect(await counter()).toEqual([{ id: 1, seq: 0 }]);
    expect(await store.requestCancel('leased', { reason: 'r', now: T, terminate: false })).toBe(true);
    expect(await store.requestCancel('leased', { reason: 'r', now: T, terminate: false })).toBe(false);
    expect(await store.requestCancel('leased', { reason: 'r', now: T, terminate: true })).toBe(true);
    expect(await counter()).toEqual([{ id: 1, seq: 2 }]);
    // Without its row (deleted by hand), a request is still stored; only its notice is lost.
    await pool.query(`DELETE FROM \`${schema}_cancel_notices\``);
    await store.create(newInstance('leased-2', 'w-2'));
    await store.claim({
      owner: 'o',
      token: 'tok2',
      leaseUntil: T + 60_000,
      now: T,
      limit: 1,
      workflows: [{ name: 'w-2', version: 1 }],
    });
    expect(await store.requestCancel('leased-2', { reason: 'r', now: T, terminate: false })).toBe(true);
    expect((await store.get('leased-2'))?.cancelRequested).toBe(true);
  });

  it('prints a script that may run twice, or again after a run stopped halfway, and leaves the tables current', async () => {
    const schema = fresh();
    const script = MySqlWorkflowStore.migrationSql(schema);
    expect(script).toContain('PREPARE nest_workflows_ddl FROM @nest_workflows_ddl;');
    const statements = migrationStatements(script);
    const connection = await pool.getConnection();
    try {
      // As far as the second index of 0002, as a tool that stopped there would leave it.
      const secondIndex = statements.findIndex(
        (statement) =>
          statement.startsWith('SET @nest_workflows_ddl') && statement.includes('instances_workflow_created'),
      );
      for (const statement of statements.slice(0, secondIndex + 2)) await connection.query(statement);
      for (const statement of statements) await connection.query(statement);
      for (const statement of statements) await connection.query(statement);
    } finally {
      connection.release();
    }
    await new MySqlWorkflowStore({ executor: fromMysql2(pool), schema, migrate: false }).init();
    expect(await indexes(schema)).toEqual(
      expect.arrayContaining(['instances_status_created', 'instances_workflow_created']),
    );
  });

  it('works under a schema name that is a reserved word, through the CLI, and prints its SQL', async () => {
    const schema = fresh(`order_${freshPrefix('x')}`.slice(0, 40));
    const out: string[] = [];
    const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line) };
    const url = `mysql://${mysqlConnection.user}:${mysqlConnection.password}@${mysqlConnection.host}:${mysqlConnection.port}/${mysqlConnection.database}`;
    expect(await cli(['migrate', '--mysql', url, '--schema', schema], io)).toBe(0);
    expect(out.at(-1)).toMatch(/applied 0001_init/);
    expect(await cli(['migrate', '--mysql', url, '--schema', schema], io)).toBe(0);
    expect(out.at(-1)).toMatch(/up to date/);
    expect(await cli(['sql', '--mysql', '--schema', 'order'], io)).toBe(0);
    expect(out.at(-1)).toContain('CREATE TABLE IF NOT EXISTS `order_instances`');
    expect(await cli(['migrate', '--mysql'], io)).toBe(2);
    const store = new MySqlWorkflowStore({
      executor: fromMysql2(pool),
      schema: 'order' === schema ? schema : schema,
      migrate: false,
    });
    await store.init();
    expect((await store.create(newInstance('x', 'w'))).created).toBe(true);
  });
});

describe('lock contention retries', () => {
  it('repeats work InnoDB rolled back for a deadlock or a lock-wait timeout, and nothing else', async () => {
    let calls = 0;
    const flaky = async () => {
      calls++;
      if (calls < 3) throw Object.assign(new Error('Deadlock found'), { errno: calls === 1 ? 1213 : 1205 });
      return 'done';
    };
    expect(await retryOnLockContention(flaky)).toBe('done');
    expect(calls).toBe(3);
    expect(isLockContention(Object.assign(new Error('dup'), { errno: 1062 }))).toBe(false);
    await expect(
      retryOnLockContention(async () => Promise.reject(Object.assign(new Error('dup'), { errno: 1062 }))),
    ).rejects.toThrow('dup');
  });
});
