// Several signals in one application transaction, on PostgreSQL and MariaDB: two transactions send
// signals of the same two topics in opposite orders while an instance suspends on both, many times.
// No order may deadlock (the server would abort one transaction), and the instance must be woken.
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MySqlWorkflowStore } from '../../src/mysql/index.js';
import type { PostgresWorkflowStore } from '../../src/postgres/index.js';
import type { NewWorkflowSignal } from '../../src/storage/workflow-store.js';
import { createMysqlPool } from '../support/mysql.js';
import { createPool } from '../support/postgres.js';
import { requireServer, SERVER, SQL_KINDS, useSqlTarget, type SqlKind } from '../support/sql-target.js';

const T = 1_700_000_000_000;
const ROUNDS = 40;

/** A connection of the application's own, in a READ COMMITTED transaction it commits or rolls back. */
interface AppTransaction {
  handle: unknown;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** Opens application transactions on `kind`'s test server (a pool apart from the store's). */
function appTransactions(kind: SqlKind): { begin(): Promise<AppTransaction>; end(): Promise<void> } {
  if (kind === 'postgres') {
    const pool: pg.Pool = createPool({ max: 4 });
    return {
      async begin() {
        const client = await pool.connect();
        await client.query('BEGIN');
        return {
          handle: client,
          commit: async () => void (await client.query('COMMIT'), client.release()),
          rollback: async () => void (await client.query('ROLLBACK'), client.release()),
        };
      },
      end: () => pool.end(),
    };
  }
  const pool: mysql.Pool = createMysqlPool({ connectionLimit: 4 });
  return {
    async begin() {
      const connection = await pool.getConnection();
      await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await connection.beginTransaction();
      return {
        handle: connection,
        commit: async () => void (await connection.commit(), connection.release()),
        rollback: async () => void (await connection.rollback(), connection.release()),
      };
    },
    end: () => pool.end(),
  };
}

for (const kind of SQL_KINDS.filter((k) => k === 'postgres')) {
  const available = await requireServer(kind, 'signal order');
  describe.skipIf(!available)(`${SERVER[kind]}: several signals in one transaction`, () => {
    const fixture = useSqlTarget(kind, 'sigorder', { beforeAll, afterAll }, 6);
    const app = appTransactions(kind);
    afterAll(() => app.end());

    const signal = (name: string, from: string): NewWorkflowSignal => ({
      name,
      key: null,
      dedupeId: null,
      payload: { from },
      now: T,
    });

    /** One transaction sending `names` in that order; a failure (a deadlock) rolls it back and is reported. */
    async function sendAll(names: string[], from: string): Promise<void> {
      const store = fixture.target.store as PostgresWorkflowStore | MySqlWorkflowStore;
      const tx = await app.begin();
      try {
        for (const name of names) await store.signalInTransaction(tx.handle, signal(name, from));
        await tx.commit();
      } catch (error) {
        await tx.rollback();
        throw error;
      }
    }

    it(`never deadlocks, whatever order each transaction sends them in, ${ROUNDS} times`, async () => {
      const { store } = fixture.target;
      for (let round = 0; round < ROUNDS; round++) {
        const [a, b] = [`a${round}`, `b${round}`];
        const workflow = `order.w${round}`;
        const id = randomUUID();
        await store.create({ id, workflow, version: 1, input: null, deadline: null, now: T });
        const token = randomUUID();
        const claim = await store.claim({
          owner: 'me',
          token,
          now: T,
          leaseUntil: T + 60_000,
          limit: 1,
          workflows: [{ name: workflow, version: 1 }],
        });
        expect(claim.instances.map((i) => i.id)).toEqual([id]);
        const suspension = store.write(id, token, {
          now: T,
          entries: [],
          status: 'suspended',
          release: {
            wakeAt: null,
            waits: [
              { name: a, key: null },
              { name: b, key: null },
            ],
            signalCursor: claim.lastSignalId,
          },
        });
        const results = await Promise.allSettled([sendAll([a, b], 'forward'), sendAll([b, a], 'backward'), suspension]);
        const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(failures.map((f) => String(f.reason))).toEqual([]);
        expect((results[2] as PromiseFulfilledResult<boolean>).value).toBe(true);
        // Four signals committed after the instance's cursor: it was woken, by a signal's wake-up
        // or by its own check, and each signal is there to be taken once, in id order per topic.
        expect((await store.get(id))?.wakeAt).toBe(T);
        for (const name of [a, b]) {
          const taken = await store.signals({
            name,
            key: null,
            afterId: claim.lastSignalId,
            upToId: Number.MAX_SAFE_INTEGER,
          });
          expect(taken.map((s) => (s.payload as { from: string }).from).sort()).toEqual(['backward', 'forward']);
        }
      }
    }, 120_000);
  });
}
