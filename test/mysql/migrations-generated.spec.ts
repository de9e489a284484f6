import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/mysql/migrations.generated.js';
import { migrationStatements } from '../../src/mysql/mysql-migrations.js';

const folder = fileURLToPath(new URL('../../migrations/mysql/', import.meta.url));

describe('MySQL migrations', () => {
  it('src/mysql/migrations.generated.ts matches migrations/mysql/*.sql (run node scripts/gen-migrations.mjs)', () => {
    const files = readdirSync(folder).filter((file) => file.endsWith('.sql')).sort();
    expect(MIGRATIONS.map((m) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`)).toEqual(files);
    for (const migration of MIGRATIONS) {
      const file = `${String(migration.version).padStart(4, '0')}_${migration.name}.sql`;
      expect(migration.sql, file).toBe(readFileSync(`${folder}${file}`, 'utf8'));
    }
  });

  it('are numbered 1, 2, 3... without gaps; every table is `{{schema}}_...`; every statement may run again', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    for (const { sql } of MIGRATIONS) {
      const statements = migrationStatements(sql).join(';\n');
      for (const match of statements.matchAll(/\b(?:CREATE TABLE(?: IF NOT EXISTS)?|REFERENCES|ALTER TABLE|CONSTRAINT)\s+(\S+)/g)) {
        expect(match[1]!.startsWith('`{{schema}}_'), match[0]).toBe(true);
      }
      // A run stopped halfway applies the next statement again: each must be idempotent.
      for (const statement of migrationStatements(sql)) expect(statement, statement.slice(0, 60)).toMatch(/^CREATE TABLE IF NOT EXISTS /);
    }
  });
});
