import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { fromPg } from '../../src/postgres/from-pg.js';
import { createPool, recordingPool, requirePostgres } from '../support/postgres.js';

// fromPg(): the pg pool adapter the PostgreSQL store runs its statements through.
const available = await requirePostgres('fromPg');

describe.skipIf(!available)('fromPg', () => {
  it('names prepared statements so two copies of the module share a connection without colliding', async () => {
    // ESM and CJS builds loaded together (or two versions of the package) each have their own
    // statement names, while the application's pool (and its connections' statement caches) is shared.
    const single = createPool({ max: 1 });
    try {
      vi.resetModules();
      const copyA = await import('../../src/postgres/from-pg.js');
      vi.resetModules();
      const copyB = await import('../../src/postgres/from-pg.js');
      expect(copyA.fromPg).not.toBe(copyB.fromPg);
      const a = copyA.fromPg(single);
      const b = copyB.fromPg(single);
      expect((await a.query('SELECT $1::int AS a', [1])).rows).toEqual([{ a: 1 }]);
      expect((await b.query('SELECT $1::text AS b', ['x'])).rows).toEqual([{ b: 'x' }]);
      expect((await a.query('SELECT $1::int AS a', [2])).rows).toEqual([{ a: 2 }]);
    } finally {
      await single.end();
    }
  });
});

describe.skipIf(!available)('fromPg: listen()', () => {
  const channel = () => `nwf_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  /** Resolves once `heard` holds `count` entries. */
  const until = (heard: unknown[], count: number) => vi.waitFor(() => expect(heard).toHaveLength(count));

  it('shares one connection among channels, LISTENing to each only while a subscription wants it', async () => {
    const { pool, recording, sent, received, held } = recordingPool();
    try {
      const executor = fromPg(recording);
      const [a, b] = [channel(), channel()];
      const heardA: string[] = [];
      const heardB: string[] = [];
      const stopA = await executor.listen!(a, (payload) => heardA.push(payload));
      const stopB = await executor.listen!(b, (payload) => heardB.push(payload));
      expect(held()).toBe(1);
      await pool.query('SELECT pg_notify($1, $2), pg_notify($3, $4)', [a, 'to-a', b, 'to-b']);
      await until(heardA, 1);
      await until(heardB, 1);
      expect([heardA, heardB]).toEqual([['to-a'], ['to-b']]);

      // b's last subscription leaves: b is UNLISTENed, and its notifications no longer reach the connection.
      await stopB();
      expect(sent.filter((text) => text.includes(b))).toEqual([`LISTEN "${b}"`, `UNLISTEN "${b}"`]);
      await pool.query('SELECT pg_notify($1, $2)', [b, 'unheard']);
      await pool.query('SELECT pg_notify($1, $2)', [a, 'after']);
      await until(heardA, 2);
      expect(received.map((r) => r.payload)).toEqual(['to-a', 'to-b', 'after']);
      expect(heardB).toEqual(['to-b']);

      // The last one leaves: nothing stays LISTENed to, and the connection goes back to the pool.
      await stopA();
      expect(sent.at(-1)).toBe('UNLISTEN *');
      expect(held()).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('gives the connection back once when its last subscriptions end together', async () => {
    const { pool, recording, sent, held } = recordingPool();
    try {
      const executor = fromPg(recording);
      const stops = [
        await executor.listen!(channel(), () => undefined),
        await executor.listen!(channel(), () => undefined),
      ];
      await Promise.all(stops.map((stop) => stop()));
      expect(sent.filter((text) => text === 'UNLISTEN *')).toHaveLength(1);
      expect(held()).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('keeps a channel LISTENed to while another subscription of it remains, and subscribes again after UNLISTEN', async () => {
    const { pool, recording, sent } = recordingPool();
    try {
      const executor = fromPg(recording);
      const [a, keep] = [channel(), channel()];
      const first: string[] = [];
      const second: string[] = [];
      const stopKeep = await executor.listen!(keep, () => undefined);
      const stopFirst = await executor.listen!(a, (payload) => first.push(payload));
      const stopSecond = await executor.listen!(a, (payload) => second.push(payload));
      await stopFirst();
      await pool.query('SELECT pg_notify($1, $2)', [a, 'one']);
      await until(second, 1);
      expect(first).toEqual([]);
      await stopSecond();
      // Left and came back while the connection stayed: LISTEN again.
      const third: string[] = [];
      const stopThird = await executor.listen!(a, (payload) => third.push(payload));
      await pool.query('SELECT pg_notify($1, $2)', [a, 'two']);
      await until(third, 1);
      expect(sent.filter((text) => text.includes(a))).toEqual([`LISTEN "${a}"`, `UNLISTEN "${a}"`, `LISTEN "${a}"`]);
      await stopThird();
      await stopKeep();
    } finally {
      await pool.end();
    }
  });

  it('tells every subscription once when the shared connection is lost, and the next listen() gets another', async () => {
    const { pool, recording, held } = recordingPool();
    const killer = createPool({ max: 1 });
    try {
      const executor = fromPg(recording);
      const errors: string[] = [];
      await executor.listen!(
        channel(),
        () => undefined,
        () => errors.push('a'),
      );
      await executor.listen!(
        channel(),
        () => undefined,
        () => errors.push('b'),
      );
      const name = (await pool.query('SHOW application_name')).rows[0].application_name as string;
      await killer.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE '%LISTEN%'`,
        [name],
      );
      await until(errors, 2);
      expect(errors.sort()).toEqual(['a', 'b']);
      expect(held()).toBe(0);
      const c = channel();
      const heard: string[] = [];
      const stop = await executor.listen!(c, (payload) => heard.push(payload));
      await pool.query('SELECT pg_notify($1, $2)', [c, 'again']);
      await until(heard, 1);
      await stop();
      expect(errors).toHaveLength(2);
    } finally {
      await killer.end();
      await pool.end();
    }
  });
});
