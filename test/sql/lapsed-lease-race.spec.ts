// A concurrency slot whose lease lapsed, while a claim counts it and the stalled holder renews it:
// on PostgreSQL and MariaDB, with the renewal placed between the claim's count of leases and the
// rest of the claim (an executor that holds the claim there), so the interleaving is the same on
// every run. The other order (the renewal after the claim) is in the contract suite's claim limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MySqlWorkflowStore, fromMysql2 } from '../../src/mysql/index.js';
import { PostgresWorkflowStore, fromPg } from '../../src/postgres/index.js';
import type { SqlExecutor } from '../../src/sql/sql-executor.js';
import { BASE_TIME as T, claimRequest, lease, newInstance, testScope } from '../../src/testing/store-fixtures.js';
import type { WorkflowStore } from '../../src/storage/workflow-store.js';
import { createMysqlPool, dropTables } from '../support/mysql.js';
import { createPool, dropSchema } from '../support/postgres.js';
import { freshSchema, requireServer, SERVER, SQL_KINDS } from '../support/sql-target.js';

/** Holds the first transaction's statement after `after` matched one, until `release()`. */
class Gate {
  private matched = false;
  private passed = false;
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  private reach!: () => void;
  /** Resolves once a statement waits at the gate. */
  readonly reached = new Promise<void>((resolve) => (this.reach = resolve));

  constructor(private readonly after: RegExp) {}

  wrap(executor: SqlExecutor): SqlExecutor {
    const inTransaction = (tx: SqlExecutor): SqlExecutor => ({
      ...tx,
      query: async (sql, params, options) => {
        if (this.matched && !this.passed) {
          this.passed = true;
          this.reach();
          await this.opened;
        }
        const result = await tx.query(sql, params, options);
        if (this.after.test(sql)) this.matched = true;
        return result;
      },
    });
    return { ...executor, transaction: (fn, options) => executor.transaction((tx) => fn(inTransaction(tx)), options) };
  }

  release(): void {
    this.open();
  }
}

/** The claim's count of leases under its concurrency locks (the first statement that counts them). */
const COUNTS_LEASES = /AS kind, workflow, concurrency_key/;

for (const kind of SQL_KINDS) {
  const available = await requireServer(kind, 'lapsed lease races');
  describe.skipIf(!available)(`${SERVER[kind]}: a lapsed lease's slot`, () => {
    const schema = freshSchema(kind, 'lapsedslot');
    let store: WorkflowStore;
    let gated: (gate: Gate) => Promise<WorkflowStore>;
    let close: () => Promise<void>;

    beforeAll(async () => {
      if (kind === 'postgres') {
        const pool = createPool({ max: 6 });
        const plain = new PostgresWorkflowStore({ executor: fromPg(pool), schema });
        await plain.init();
        store = plain;
        const opened: PostgresWorkflowStore[] = [];
        gated = async (gate) => {
          const next = new PostgresWorkflowStore({ executor: gate.wrap(fromPg(pool)), schema });
          opened.push(next);
          await next.init();
          return next;
        };
        close = async () => {
          for (const s of [plain, ...opened]) await s.close();
          await dropSchema(pool, schema);
          await pool.end();
        };
      } else {
        const pool = createMysqlPool({ connectionLimit: 6 });
        const plain = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
        await plain.init();
        store = plain;
        const opened: MySqlWorkflowStore[] = [];
        gated = async (gate) => {
          const next = new MySqlWorkflowStore({ executor: gate.wrap(fromMysql2(pool)), schema });
          opened.push(next);
          await next.init();
          return next;
        };
        close = async () => {
          for (const s of [plain, ...opened]) await s.close();
          await dropTables(pool, schema);
          await pool.end();
        };
      }
    });
    afterAll(async () => close?.());

    it('a renewal that lands after the claim counted the lease lapsed keeps the slot: the claim takes nothing', async () => {
      const s = testScope();
      const limits = [{ workflow: s.workflow, limit: null, perKey: 1 }];
      // The holder comes after `next` in claim order, so a claim of one looks at `next` first.
      const holder = newInstance(s.id('holder'), s.workflow, { concurrencyKey: 'k', priority: 5 });
      const { token } = await lease(store, holder, { leaseUntil: T + 1_000, limits });
      await store.create(newInstance(s.id('next'), s.workflow, { concurrencyKey: 'k', now: T + 1 }));

      const gate = new Gate(COUNTS_LEASES);
      const claimer = await gated(gate);
      const claim = claimer.claim(
        claimRequest(s.workflow, { now: T + 1_001, limit: 1, leaseUntil: T + 60_000, limits }),
      );
      await gate.reached;
      // The stalled holder's heartbeat lands now, between the count and the lease.
      const renewed = await store.renew(holder.id, token, T + 60_000);
      gate.release();
      const claimed = (await claim).instances.map((i) => i.id);

      expect(renewed).not.toBeNull();
      expect(claimed).toEqual([]);
      const live = await liveLeases(store, [holder.id, s.id('next')], T + 1_002);
      expect(live).toEqual([holder.id]);
    });
  });
}

/** Which of `ids` hold a live lease at `now`. */
async function liveLeases(store: WorkflowStore, ids: string[], now: number): Promise<string[]> {
  const live: string[] = [];
  for (const id of ids) {
    const found = await store.get(id);
    if (found?.leaseToken != null && found.leaseUntil !== null && found.leaseUntil >= now) live.push(id);
  }
  return live;
}
