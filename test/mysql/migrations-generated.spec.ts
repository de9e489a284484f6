import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/mysql/migrations.generated.js';
import { addedObject, migrationStatements } from '../../src/mysql/mysql-migrations.js';

const folder = fileURLToPath(new URL('../../migrations/mysql/', import.meta.url));

describe('MySQL migrations', () => {
  it('src/mysql/migrations.generated.ts matches migrations/mysql/*.sql (run node scripts/gen-migrations.mjs)', () => {
    const files = readdirSync(folder)
      .filter((file) => file.endsWith('.sql'))
      .sort();
    expect(MIGRATIONS.map((m) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`)).toEqual(files);
    for (const migration of MIGRATIONS) {
      const file = `${String(migration.version).padStart(4, '0')}_${migration.name}.sql`;
      expect(migration.sql, file).toBe(readFileSync(`${folder}${file}`, 'utf8'));
    }
  });

  it('are numbered 1, 2, 3... without gaps; every table is `{{schema}}_...`; every statement may run again or is checked first', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    for (const { sql } of MIGRATIONS) {
      const statements = migrationStatements(sql).join(';\n');
      for (const match of statements.matchAll(
        /\b(?:CREATE TABLE(?: IF NOT EXISTS)?|INSERT IGNORE INTO|REFERENCES|ALTER TABLE|CONSTRAINT|ON)\s+(`\S+)/g,
      )) {
        expect(match[1]!.startsWith('`{{schema}}_'), match[0]).toBe(true);
      }
      // A run stopped between a statement and its record applies it again: each must be idempotent
      // (a table created if missing, a row inserted unless there), or add one column or index,
      // which the runner looks up first (MySQL 8.0 has no IF NOT EXISTS for them).
      for (const statement of migrationStatements(sql)) {
        if (
          /^CREATE TABLE IF NOT EXISTS /.test(statement) ||
          /^INSERT IGNORE INTO `\{\{schema\}\}_\w+` \([^)]+\) VALUES \([^)]+\)$/.test(statement)
        )
          continue;
        expect(addedObject(statement), statement.slice(0, 60)).toMatchObject({
          table: expect.stringMatching(/^\{\{schema\}\}_/),
        });
      }
    }
  });

  it('tells a statement that adds one column or one index from anything else', () => {
    expect(addedObject('ALTER TABLE `s_instances` ADD COLUMN trace_context LONGTEXT NULL')).toEqual({
      kind: 'column',
      table: 's_instances',
      name: 'trace_context',
    });
    expect(addedObject('CREATE INDEX i_x ON `s_instances` (status, created_at, id)')).toEqual({
      kind: 'index',
      table: 's_instances',
      name: 'i_x',
    });
    expect(
      addedObject('ALTER TABLE `s_instances` DROP INDEX i_x, ADD INDEX i_x (claim_priority, concurrency_key, wake_at)'),
    ).toEqual({ kind: 'index', table: 's_instances', name: 'i_x', columns: 'claim_priority,concurrency_key,wake_at' });
    // Two names: the old index would be gone before the new one is there under the name the claim forces.
    expect(addedObject('ALTER TABLE `s_instances` DROP INDEX i_x, ADD INDEX i_y (status)')).toBeNull();
    expect(addedObject('ALTER TABLE `s_instances` ADD COLUMN a INT, ADD COLUMN b INT')).toBeNull();
    expect(addedObject('ALTER TABLE `s_instances` DROP COLUMN a')).toBeNull();
    expect(addedObject('CREATE UNIQUE INDEX i_x ON `s_instances` (id)')).toBeNull();
    expect(addedObject('CREATE TABLE IF NOT EXISTS `s_x` (id INT)')).toBeNull();
  });
});
