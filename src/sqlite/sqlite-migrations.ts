import { MIGRATIONS } from './migrations.generated.js';
import {
  migrationLabel,
  MigrationRunner,
  renderMigration,
  type MigrationDialect,
  type SqlMigration,
} from '../sql/migration-runner.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor, SqlQueryResult } from '../sql/sql-executor.js';
import type { SqliteConnection } from './sqlite-connection.js';
import type { SqliteStatements } from './sqlite-statements.js';

/** The SQLite migrations shipped with this version of the package, in order. */
export const SQLITE_MIGRATIONS: readonly SqlMigration[] = MIGRATIONS;

function historyTable(schema: string): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${quoteIdentifier(`${schema}_migrations`)} (\n` +
    `  version    INTEGER NOT NULL PRIMARY KEY,\n` +
    `  name       TEXT NOT NULL,\n` +
    `  applied_at INTEGER NOT NULL\n` +
    `)`
  );
}

/**
 * How SQLite migrates: in one `BEGIN IMMEDIATE` transaction (SQLite's DDL is transactional, and the
 * database's write lock is the migration lock: processes starting together migrate once), recorded
 * in `<schema>_migrations`.
 */
function sqliteMigrationDialect(schema: string): MigrationDialect {
  const history = quoteIdentifier(`${schema}_migrations`);
  return {
    async appliedVersions(executor) {
      const present = await executor.query(`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?`, [
        `${schema}_migrations`,
      ]);
      if (present.rows.length === 0) return [];
      const { rows } = await executor.query(`SELECT version FROM ${history}`, []);
      return rows.map((row) => Number(row.version));
    },
    withLock: (executor, fn) => executor.transaction(fn),
    async prepare(executor) {
      await executor.query(historyTable(schema));
    },
    async apply(executor, migration) {
      await executor.query(renderMigration(migration.sql, schema));
      await executor.query(`INSERT INTO ${history} (version, name, applied_at) VALUES (?, ?, ?)`, [
        migration.version,
        migration.name,
        Date.now(),
      ]);
    },
  };
}

/**
 * The migration runner's view of the connection: a statement with parameters (or a `SELECT`) runs
 * as one statement; one without (a migration file) as a script. `transaction()` holds the write lock.
 */
function migrationExecutor(connection: SqliteConnection): SqlExecutor {
  const run = (sql: SqliteStatements, text: string, params?: readonly unknown[]): SqlQueryResult => {
    if (/^\s*SELECT\b/i.test(text)) {
      const rows = sql.all(text, params ?? []);
      return { rows, rowCount: rows.length };
    }
    if (params === undefined) {
      sql.database.exec(text);
      return { rows: [], rowCount: 0 };
    }
    return { rows: [], rowCount: sql.run(text, params) };
  };
  const inTransaction = (sql: SqliteStatements): SqlExecutor => ({
    query: async (text, params) => run(sql, text, params),
    transaction: (fn) => fn(inTransaction(sql)),
  });
  return {
    query: (text, params) => connection.read((sql) => run(sql, text, params)),
    transaction: (fn) => connection.transaction((sql) => fn(inTransaction(sql))),
  };
}

/** A runner over the store's migrations on `connection`. */
export function sqliteMigrationRunner(connection: SqliteConnection, schema: string, store: string): MigrationRunner {
  return new MigrationRunner(migrationExecutor(connection), sqliteMigrationDialect(schema), SQLITE_MIGRATIONS, {
    store,
    schema,
  });
}

/**
 * Every migration as one SQL script for `schema`, for your own migration tool: creates the history
 * table, then applies and records each migration. Run it once, on a database without the store's
 * tables, in one transaction.
 */
export function sqliteMigrationSql(schema: string): string {
  const history = quoteIdentifier(`${schema}_migrations`);
  const parts = [
    `-- @nestjs/workflows: the SQLite tables "${schema}_*" (${SQLITE_MIGRATIONS.length} migration(s)).`,
    `-- Run once, in one transaction. The store records each migration in ${history}.`,
    'BEGIN IMMEDIATE;',
    `${historyTable(schema)};`,
  ];
  for (const migration of SQLITE_MIGRATIONS) {
    parts.push(
      `-- ${migrationLabel(migration)}`,
      renderMigration(migration.sql, schema).trimEnd(),
      `INSERT INTO ${history} (version, name, applied_at) VALUES (${migration.version}, '${migration.name}', ` +
        `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)) ON CONFLICT (version) DO NOTHING;`,
    );
  }
  parts.push('COMMIT;');
  return `${parts.join('\n\n')}\n`;
}
