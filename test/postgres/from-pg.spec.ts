import { describe, expect, it, vi } from 'vitest';
import { createPool, requirePostgres } from '../support/postgres.js';

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
