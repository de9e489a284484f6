import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/postgres/migrations.generated.js';

const folder = fileURLToPath(new URL('../../migrations/postgres/', import.meta.url));

describe('PostgreSQL migrations', () => {
  it('src/postgres/migrations.generated.ts matches migrations/postgres/*.sql (run node scripts/gen-migrations.mjs)', () => {
    const files = readdirSync(folder)
      .filter((file) => file.endsWith('.sql'))
      .sort();
    expect(MIGRATIONS.map((m) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`)).toEqual(files);
    for (const migration of MIGRATIONS) {
      const file = `${String(migration.version).padStart(4, '0')}_${migration.name}.sql`;
      expect(migration.sql, file).toBe(readFileSync(`${folder}${file}`, 'utf8'));
    }
  });

  it('are numbered 1, 2, 3... without gaps, and every statement is schema-qualified', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    for (const { sql } of MIGRATIONS) {
      for (const match of sql.matchAll(/\b(?:CREATE TABLE|CREATE INDEX \w+ ON|REFERENCES|ALTER TABLE)\s+(\S+)/g)) {
        expect(match[1]!.startsWith('{{schema}}.'), match[0]).toBe(true);
      }
    }
  });
});
