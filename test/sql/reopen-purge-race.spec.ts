// retry() reopens a finished parent in a transaction: it locks the parent's row, reads the children
// it will wait for (each still there, its end stored), updates the row and commits. A purge() or
// delete() of such a child that runs while that transaction is open must not take the child or its
// end: the parent, reopened at the commit, would wait forever for them. Deterministic: the store's
// executor holds the reopen transaction open after its last statement (the lock held, the children
// read, not yet committed); the purge or delete runs then, to its end or until it waits for a lock;
// then the reopen commits.
import { describe, expect, it } from 'vitest';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import { fromPg, PostgresWorkflowStore } from '../../src/postgres/index.js';
import { createMysqlPool, dropTables } from '../support/mysql.js';
import { createPool, dropSchema } from '../support/postgres.js';
import { freshSchema, requireServer, SERVER, SQL_KINDS, type SqlKind } from '../support/sql-target.js';
import { lockWaits } from '../support/mysql-lock-waits.js';
import { createContractEngine, type ContractEngine } from '../../src/testing/contract/contract-engine.js';
import {
  cancelledParentAMonthLater,
  childEnds,
  RaceChild,
  RaceParent,
} from '../../src/testing/contract/retry-child-race.contract.js';

/** The statement both stores' `reopen()` locks the row with (its conditions, `FOR UPDATE`). */
const REOPEN_LOCK = /AND runs = (\$3|\?) AND NOT \(lease_token IS NOT NULL AND lease_until >= (\$4|\?)\) FOR UPDATE/;

interface Pause {
  /** Resolves once a reopen transaction has run its last statement, landing, and waits to commit. */
  reached: Promise<void>;
  /** Lets it commit. */
  release(): void;
}

/** `executor`, whose next landing reopen transaction (once armed) waits before its commit. */
function pausing(executor: SqlExecutor): { executor: SqlExecutor; pauseNextReopen(): Pause } {
  let armed: { reached(): void; released: Promise<void> } | null = null;
  const wrapped: SqlExecutor = {
    ...executor,
    transaction: (fn, options) =>
      executor.transaction(async (tx) => {
        let reopening = false;
        const watched: SqlExecutor = {
          ...tx,
          query(sql, params, queryOptions) {
            if (REOPEN_LOCK.test(sql)) reopening = true;
            return tx.query(sql, params, queryOptions);
          },
        };
        const result = await fn(watched);
        const pause = armed;
        if (reopening && result === true && pause) {
          armed = null;
          pause.reached();
          await pause.released;
        }
        return result;
      }, options),
  };
  return {
    executor: wrapped,
    pauseNextReopen() {
      let reached!: () => void;
      let release!: () => void;
      const pause: Pause = { reached: new Promise((resolve) => (reached = resolve)), release: () => release() };
      armed = { reached, released: new Promise((resolve) => (release = resolve)) };
      return pause;
    },
  };
}

interface Target {
  store: PostgresWorkflowStore | MySqlWorkflowStore;
  pauseNextReopen(): Pause;
  /** Whether a statement on the store's tables waits for a row lock. */
  lockWaiting(): Promise<boolean>;
  close(): Promise<void>;
}

function openTarget(kind: SqlKind): Target {
  const schema = freshSchema(kind, 'rpr');
  if (kind === 'postgres') {
    const pool = createPool({ max: 6 });
    const { executor, pauseNextReopen } = pausing(fromPg(pool));
    const store = new PostgresWorkflowStore({ executor, schema });
    return {
      store,
      pauseNextReopen,
      lockWaiting: async () =>
        (
          await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [
            `"${schema}".`,
          ])
        ).rows.length > 0,
      async close() {
        await store.close();
        await dropSchema(pool, schema);
        await pool.end();
      },
    };
  }
  const pool = createMysqlPool({ connectionLimit: 6 });
  const { executor, pauseNextReopen } = pausing(fromMysql2(pool));
  const store = new MySqlWorkflowStore({ executor, schema });
  return {
    store,
    pauseNextReopen,
    async lockWaiting() {
      return (await lockWaits(pool)).some((transaction) => transaction.includes(`\`${schema}_`));
    },
    async close() {
      await store.close();
      await dropTables(pool, schema);
      await pool.end();
    },
  };
}

/** Waits until `work` settled or `waiting()` says it waits for a lock (at most 20 s). */
async function settledOrWaiting(work: Promise<unknown>, waiting: () => Promise<boolean>): Promise<void> {
  let settled = false;
  void work.then(
    () => (settled = true),
    () => (settled = true),
  );
  const deadline = Date.now() + 20_000;
  while (!settled && !(await waiting())) {
    if (Date.now() > deadline)
      throw new Error('Test: the purge or delete neither ended nor waited for a lock within 20 s.');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'purge() and delete() during a reopen');
  describe.runIf(available)(
    `purge() and delete() of a child while retry() reopens its parent (${SERVER[kind]})`,
    () => {
      /**
       * Parent `p` starts child `p/c` (which completes at once) and sleeps; it is cancelled in its
       * sleep, 31 days pass, and `retry('p')` runs, its reopen held before its commit while `race`
       * runs. Resolves to how `race` ended.
       */
      async function scenario(
        race: (engine: ContractEngine) => Promise<unknown>,
        then: (raced: { value?: unknown; error?: unknown }) => Promise<void>,
      ) {
        const target = openTarget(kind);
        await target.store.init();
        const engine = createContractEngine(target.store, { workflows: [RaceChild, RaceParent] });
        try {
          await cancelledParentAMonthLater(engine, 'p', expect);
          const pause = target.pauseNextReopen();
          const retried = engine.client.retry('p');
          retried.catch(() => undefined);
          await pause.reached;
          const racing = race(engine);
          racing.catch(() => undefined);
          await settledOrWaiting(racing, () => target.lockWaiting());
          pause.release();
          await retried;
          const raced = await racing.then(
            (value: unknown) => ({ value }),
            (error: unknown) => ({ error }),
          );
          await then(raced);
          // The child and its end are there: the reopened parent takes the end and completes.
          expect((await engine.client.getStatus('p/c')).status).toBe('completed');
          expect(await childEnds(target.store, 'p/c')).toBe(1);
          await engine.drain();
          engine.clock.advance('30d');
          await engine.drain();
          expect(await engine.client.getStatus('p')).toMatchObject({ status: 'completed', output: 70 });
        } finally {
          await engine.close();
          await target.close();
        }
      }

      it('purge() keeps the child and its end', async () => {
        await scenario(
          (engine) => engine.client.purge({ olderThan: '30d', statuses: ['completed'] }),
          async (raced) =>
            expect(raced).toEqual({ value: { instances: 0, signals: 0, rateLimits: 0, debounceKeys: 0 } }),
        );
      });

      it("purge() of signals keeps the child's end", async () => {
        await scenario(
          (engine) => engine.client.purge({ olderThan: '30d', statuses: ['failed'] }),
          async (raced) =>
            expect(raced).toEqual({ value: { instances: 0, signals: 0, rateLimits: 0, debounceKeys: 0 } }),
        );
      });

      it('delete() of the child refuses: its parent is reopened', async () => {
        await scenario(
          (engine) => engine.client.delete('p/c'),
          async (raced) => {
            expect(raced.error).toMatchObject({ name: 'WorkflowInvalidStateError' });
            expect(String(raced.error)).toMatch(/child of instance "p", which is pending/);
          },
        );
      });
    },
  );
}
