import { MIGRATIONS } from './migrations.generated.js';
import { migrationLabel, renderMigration, type MigrationDialect, type SqlMigration } from '../sql/migration-runner.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** The PostgreSQL migrations shipped with this version of the package, in order. */
export const POSTGRES_MIGRATIONS: readonly SqlMigration[] = MIGRATIONS;

function historyTable(quoted: string): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (\n` +
    `  version    integer NOT NULL PRIMARY KEY,\n` +
    `  name       text NOT NULL,\n` +
    `  applied_at timestamptz NOT NULL DEFAULT now()\n` +
    `)`
  );
}

/**
 * How PostgreSQL migrates a store's schema: in one transaction (PostgreSQL's DDL is
 * transactional, so a failed migration leaves nothing half done) holding a transaction-scoped
 * advisory lock on the schema's name, recorded in `<schema>.migrations`.
 */
export function postgresMigrationDialect(schema: string): MigrationDialect {
  const quoted = quoteIdentifier(schema);
  return {
    async appliedVersions(executor) {
      const { rows } = await executor.query('SELECT to_regclass($1) IS NOT NULL AS present', [`${quoted}.migrations`]);
      if (rows[0]?.present !== true) return [];
      const applied = await executor.query(`SELECT version FROM ${quoted}.migrations`);
      return applied.rows.map((row) => Number(row.version));
    },
    withLock(executor, fn) {
      return executor.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
          `@nestjs/workflows:migrate:${schema}`,
        ]);
        return fn(tx);
      });
    },
    async prepare(executor) {
      // Only when missing: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege on the database.
      const { rows } = await executor.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      if (rows.length === 0) await executor.query(`CREATE SCHEMA ${quoted}`);
      await executor.query(historyTable(quoted));
    },
    async apply(executor: SqlExecutor, migration) {
      // Without parameters, pg sends the file as one simple query: all its statements, in order.
      await executor.query(renderMigration(migration.sql, quoted));
      await executor.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    },
  };
}

/**
 * Every migration as one SQL script for the given schema, for users who apply migrations with
 * their own tool: creates the schema and the history table, then applies and records each
 * migration (so a store with `migrate: false` finds the schema current). Run it once, in a
 * transaction.
 */
export function postgresMigrationSql(schema: string): string {
  const quoted = quoteIdentifier(schema);
  const parts = [
    `-- @nestjs/workflows: the PostgreSQL schema ${quoted} (${POSTGRES_MIGRATIONS.length} migration(s)).`,
    `-- Run once, in one transaction. The store records each migration in ${quoted}.migrations.`,
    `CREATE SCHEMA IF NOT EXISTS ${quoted};`,
    `${historyTable(quoted)};`,
  ];
  for (const migration of POSTGRES_MIGRATIONS) {
    parts.push(
      `-- ${migrationLabel(migration)}`,
      renderMigration(migration.sql, quoted).trimEnd(),
      `INSERT INTO ${quoted}.migrations (version, name) VALUES (${migration.version}, '${migration.name}') ON CONFLICT (version) DO NOTHING;`,
    );
  }
  return `${parts.join('\n\n')}\n`;
}
