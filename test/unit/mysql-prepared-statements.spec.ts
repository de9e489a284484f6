// fromMysql2()'s prepared statements, against a stand-in for mysql2's callback pool: which texts
// it prepares (those marked `repeated`, from their third send, up to `preparedStatements` texts),
// what it does when the server won't prepare one, and its option's checks. The real server's
// side (MariaDB runs them, each connection keeps at most that many) is in test/mysql.
import { describe, expect, it } from 'vitest';
import { fromMysql2, type Mysql2PoolLike } from '../../src/mysql/index.js';

type Callback = (error: Error | null, result?: unknown) => void;

function fakePool(options: { refuse?: (sql: string) => boolean } = {}) {
  const sent: Array<['query' | 'execute', string]> = [];
  const core = {
    config: { connectionLimit: 4, connectionConfig: {} },
    query(sql: string, _values: unknown, callback: Callback) {
      sent.push(['query', sql]);
      queueMicrotask(() => callback(null, [{ via: 'query' }]));
    },
    execute(sql: string, _values: unknown, callback: Callback) {
      sent.push(['execute', sql]);
      if (options.refuse?.(sql)) {
        const error = Object.assign(new Error('This command is not supported in the prepared statement protocol yet'), {
          errno: 1295,
          code: 'ER_UNSUPPORTED_PS',
        });
        queueMicrotask(() => callback(error));
        return;
      }
      queueMicrotask(() => callback(null, [{ via: 'execute' }]));
    },
  };
  const pool = {
    pool: core,
    query: () => Promise.reject(new Error('the executor goes through the callback pool')),
    getConnection: () => Promise.reject(new Error('not used here')),
  } as unknown as Mysql2PoolLike;
  return { pool, sent };
}

const repeated = { repeated: true };

describe('fromMysql2() prepared statements', () => {
  it('prepares a text marked repeated from its third send on, and never one that is not', async () => {
    const { pool, sent } = fakePool();
    const executor = fromMysql2(pool);
    for (let i = 0; i < 5; i++) await executor.query('SELECT ? AS a', [i], repeated);
    for (let i = 0; i < 5; i++) await executor.query('SELECT ? AS b', [i]);
    // Without parameters there is nothing to bind: always text.
    for (let i = 0; i < 5; i++) await executor.query('SELECT 1 AS c', [], repeated);
    expect(sent.filter(([, sql]) => sql === 'SELECT ? AS a').map(([how]) => how)).toEqual([
      'query',
      'query',
      'execute',
      'execute',
      'execute',
    ]);
    expect(sent.filter(([how, sql]) => how === 'execute' && sql !== 'SELECT ? AS a')).toEqual([]);
  });

  it('prepares at most preparedStatements texts; the rest go as text', async () => {
    const { pool, sent } = fakePool();
    const executor = fromMysql2(pool, { preparedStatements: 2 });
    const texts = ['SELECT ? AS a', 'SELECT ? AS b', 'SELECT ? AS c'];
    for (let round = 0; round < 4; round++) for (const sql of texts) await executor.query(sql, [round], repeated);
    const executed = new Set(sent.filter(([how]) => how === 'execute').map(([, sql]) => sql));
    expect([...executed]).toEqual(['SELECT ? AS a', 'SELECT ? AS b']);
    expect(sent.filter(([, sql]) => sql === 'SELECT ? AS c').map(([how]) => how)).toEqual([
      'query',
      'query',
      'query',
      'query',
    ]);
  });

  it('sends a text the server will not prepare as text, at once and from then on', async () => {
    const { pool, sent } = fakePool({ refuse: (sql) => sql.startsWith('DO') });
    const executor = fromMysql2(pool);
    const results = [];
    for (let i = 0; i < 6; i++) results.push((await executor.query('DO ?', [i], repeated)).rows);
    expect(results.every((rows) => rows[0]?.via === 'query')).toBe(true);
    expect(sent.map(([how]) => how)).toEqual(['query', 'query', 'execute', 'query', 'query', 'query', 'query']);
  });

  it("sends a text as text when the server's prepared statements are at max_prepared_stmt_count", async () => {
    const { pool, sent } = fakePool();
    const core = (pool as unknown as { pool: { execute: (sql: string, values: unknown, callback: Callback) => void } })
      .pool;
    core.execute = (sql, _values, callback) => {
      sent.push(['execute', sql]);
      const error = Object.assign(
        new Error("Can't create more than max_prepared_stmt_count statements (current value: 16382)"),
        {
          errno: 1461,
          code: 'ER_MAX_PREPARED_STMT_COUNT_REACHED',
        },
      );
      queueMicrotask(() => callback(error));
    };
    const executor = fromMysql2(pool);
    const results = [];
    for (let i = 0; i < 5; i++) results.push((await executor.query('SELECT ? AS a', [i], repeated)).rows);
    expect(results.every((rows) => rows[0]?.via === 'query')).toBe(true);
    expect(sent.map(([how]) => how)).toEqual(['query', 'query', 'execute', 'query', 'query', 'query']);
  });

  it('keeps a text refused on one connection among the preparedStatements, which other connections may hold', async () => {
    const { pool, sent } = fakePool();
    const core = (pool as unknown as { pool: { execute: (sql: string, values: unknown, callback: Callback) => void } })
      .pool;
    let executes = 0;
    // The first execute prepares the text on one connection; the next lands on another, when the
    // server is at max_prepared_stmt_count.
    core.execute = (sql, _values, callback) => {
      sent.push(['execute', sql]);
      if (executes++ === 0) return queueMicrotask(() => callback(null, [{ via: 'execute' }]));
      queueMicrotask(() =>
        callback(
          Object.assign(new Error("Can't create more than max_prepared_stmt_count statements"), { errno: 1461 }),
        ),
      );
    };
    const executor = fromMysql2(pool, { preparedStatements: 1 });
    for (let i = 0; i < 4; i++) await executor.query('SELECT ? AS a', [i], repeated);
    for (let i = 0; i < 4; i++) await executor.query('SELECT ? AS b', [i], repeated);
    expect(sent.filter(([how]) => how === 'execute').map(([, sql]) => sql)).toEqual(['SELECT ? AS a', 'SELECT ? AS a']);
  });

  it('passes other errors of a prepared statement on', async () => {
    const { pool } = fakePool();
    const core = (pool as unknown as { pool: { execute: (sql: string, values: unknown, callback: Callback) => void } })
      .pool;
    core.execute = (_sql, _values, callback) =>
      queueMicrotask(() => callback(Object.assign(new Error('Deadlock found'), { errno: 1213 })));
    const executor = fromMysql2(pool);
    await executor.query('SELECT ? AS a', [1], repeated);
    await executor.query('SELECT ? AS a', [2], repeated);
    await expect(executor.query('SELECT ? AS a', [3], repeated)).rejects.toThrow('Deadlock found');
  });

  it('with preparedStatements: 0, prepares nothing', async () => {
    const { pool, sent } = fakePool();
    const executor = fromMysql2(pool, { preparedStatements: 0 });
    for (let i = 0; i < 5; i++) await executor.query('SELECT ? AS a', [i], repeated);
    expect(sent.every(([how]) => how === 'query')).toBe(true);
  });

  it('refuses a preparedStatements that is not a whole number of 0 or more, and unknown options', () => {
    const { pool } = fakePool();
    for (const value of [-1, 1.5, Number.NaN, '8']) {
      expect(() => fromMysql2(pool, { preparedStatements: value as number })).toThrow(
        `fromMysql2(): \`preparedStatements\` must be a whole number of 0 or more (0: none prepared), got ${String(value)}.`,
      );
    }
    expect(() => fromMysql2(pool, { prepared: 3 } as never)).toThrow(
      'fromMysql2(): unknown option "prepared"; the options are "preparedStatements".',
    );
  });
});
