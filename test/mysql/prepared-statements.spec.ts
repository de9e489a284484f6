// The store's hot path as MariaDB runs it prepared (fromMysql2(): a text marked `repeated` goes
// through mysql2's execute() from its third send, every parameter bound with its binary type):
// what it writes and answers must be what the same statements give sent as text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromMysql2, MySqlWorkflowStore } from '../../src/mysql/index.js';
import {
  BASE_TIME as T,
  details,
  journalEntry,
  lease,
  newInstance,
  testScope,
} from '../../src/testing/store-fixtures.js';
import { createMysqlPool, dropTables, freshPrefix, requireMysql } from '../support/mysql.js';

const available = await requireMysql('MySQL prepared statements');

describe.skipIf(!available)('MySqlWorkflowStore: the hot path prepared (MariaDB)', () => {
  const schema = freshPrefix('prep');
  let pool: ReturnType<typeof createMysqlPool>;
  let store: MySqlWorkflowStore;
  let mariadb = false;

  beforeAll(async () => {
    pool = createMysqlPool({ connectionLimit: 4 });
    store = new MySqlWorkflowStore({ executor: fromMysql2(pool), schema });
    await store.init();
    const [rows] = await pool.query('SELECT VERSION() AS version');
    mariadb = /MariaDB/i.test(String((rows as Array<{ version: string }>)[0]?.version));
  });

  afterAll(async () => {
    await store?.close();
    if (pool) await dropTables(pool, schema);
    await pool?.end();
  });

  it('sends a text of more than 65,535 parameters, which the server will not prepare, as text', async () => {
    if (!mariadb) return;
    const executor = fromMysql2(pool);
    const ids = Array.from({ length: 70_000 }, (_, i) => `none-${i}`);
    const sql = `SELECT COUNT(*) AS n FROM \`${schema}_instances\` WHERE id IN (${ids.map(() => '?').join(', ')})`;
    for (let i = 0; i < 4; i++) expect((await executor.query(sql, ids, { repeated: true })).rows).toEqual([{ n: 0 }]);
  });

  it('keeps journal entries past 64 KB whole when a write of several entries goes prepared', async () => {
    if (!mariadb) return; // MySQL 8.0: the store prepares nothing (see MySqlServerFeatures).
    const s = testScope();
    // Two entries a write: the fenced insert's derived table (one SELECT of parameters per row,
    // UNION ALL), the same text each time, so prepared from the third write on.
    const big = (i: number) => journalEntry('big', { value: { i, text: 'é'.repeat(40_000) } });
    for (let i = 0; i < 5; i++) {
      const id = s.id(`w${i}`);
      const { token } = await lease(store, newInstance(id, `${s.workflow}-${i}`));
      expect(await store.write(id, token, { now: T + 1, entries: [journalEntry('small'), big(i)] })).toBe(true);
    }
    for (let i = 0; i < 5; i++) {
      const journal = (await details(store, s.id(`w${i}`))).journal!;
      expect(journal.map((entry) => entry.name)).toEqual(['small', 'big']);
      expect(journal[1]!.value).toEqual(big(i).value);
    }
  });
});
