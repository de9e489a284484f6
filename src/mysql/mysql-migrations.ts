import { MIGRATIONS } from './migrations.generated.js';
import { quoteMysqlIdentifier } from './mysql-dialect.js';
import { migrationLabel, renderMigration, type MigrationDialect, type SqlMigration } from '../sql/migration-runner.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** The MySQL migrations shipped with this version of the package, in order. */
export const MYSQL_MIGRATIONS: readonly SqlMigration[] = MIGRATIONS;

/** How long a process waits for another's migration before giving up, in seconds. */
const LOCK_WAIT_SECONDS = 120;

/** A migration's statements, in order: the file split at each `;` that ends a line, comments dropped. */
export function migrationStatements(sql: string): string[] {
  return sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .split(/;[ \t]*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

function historyTable(schema: string): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${quoteMysqlIdentifier(`${schema}_migrations`)} (\n` +
    `  version    INT NOT NULL,\n` +
    `  step       INT NOT NULL,\n` +
    `  name       VARCHAR(255) NOT NULL,\n` +
    `  applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,\n` +
    `  PRIMARY KEY (version, step)\n` +
    `) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin`
  );
}

/**
 * How MySQL migrates a store's tables. DDL is not transactional (each statement commits on its
 * own), so a migration runs one statement at a time and records each in `<schema>_migrations`
 * (`step` 1, 2...) as soon as it ran; a run stopped halfway resumes after the last recorded
 * statement, and `step` 0 marks the migration complete. Runs hold the named lock
 * `nest_workflows:migrate:<schema>` (`GET_LOCK`, held by the session), so processes that start
 * together migrate once.
 */
export function mysqlMigrationDialect(schema: string): MigrationDialect {
  const history = quoteMysqlIdentifier(`${schema}_migrations`);
  const lockName = `nest_workflows:migrate:${schema}`;
  return {
    async appliedVersions(executor) {
      const { rows } = await executor.query(
        'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
        [`${schema}_migrations`],
      );
      if (Number(rows[0]?.n ?? 0) === 0) return [];
      const applied = await executor.query(`SELECT version FROM ${history} WHERE step = 0`);
      return applied.rows.map((row) => Number(row.version));
    },
    // One connection (a transaction's), since GET_LOCK belongs to the session; the DDL inside
    // commits as it goes, which is what makes each recorded statement durable.
    withLock(executor, fn) {
      return executor.transaction(async (tx) => {
        const { rows } = await tx.query('SELECT GET_LOCK(?, ?) AS got', [lockName, LOCK_WAIT_SECONDS]);
        if (Number(rows[0]?.got) !== 1) {
          throw new Error(
            `MySqlWorkflowStore: another process has held the migration lock "${lockName}" for ${LOCK_WAIT_SECONDS} s. ` +
              'Wait for its migration to end (or end that session), then start again.',
          );
        }
        try {
          return await fn(tx);
        } finally {
          await tx.query('SELECT RELEASE_LOCK(?)', [lockName]);
        }
      });
    },
    async prepare(executor) {
      await executor.query(historyTable(schema));
    },
    async apply(executor: SqlExecutor, migration) {
      const statements = migrationStatements(renderMigration(migration.sql, schema));
      const { rows } = await executor.query(`SELECT step FROM ${history} WHERE version = ? AND step > 0`, [migration.version]);
      const done = new Set(rows.map((row) => Number(row.step)));
      for (const [index, statement] of statements.entries()) {
        if (done.has(index + 1)) continue;
        await executor.query(statement);
        await executor.query(`INSERT INTO ${history} (version, step, name) VALUES (?, ?, ?)`, [migration.version, index + 1, migration.name]);
      }
      await executor.query(`INSERT INTO ${history} (version, step, name) VALUES (?, 0, ?)`, [migration.version, migration.name]);
    },
  };
}

/**
 * Every migration as one SQL script for the given schema name, for users who apply migrations with
 * their own tool: creates the history table, then runs and records each migration (so a store with
 * `migrate: false` finds the tables current). Every statement may run again, so a script stopped
 * halfway can simply be run again.
 */
export function mysqlMigrationSql(schema: string): string {
  const history = quoteMysqlIdentifier(`${schema}_migrations`);
  const parts = [
    `-- @nestjs/workflows: the MySQL / MariaDB tables ${schema}_* (${MYSQL_MIGRATIONS.length} migration(s)).`,
    `-- The store records each migration in ${history}.`,
    `${historyTable(schema)};`,
  ];
  for (const migration of MYSQL_MIGRATIONS) {
    parts.push(
      `-- ${migrationLabel(migration)}`,
      ...migrationStatements(renderMigration(migration.sql, schema)).map((statement) => `${statement};`),
      `INSERT IGNORE INTO ${history} (version, step, name) VALUES (${migration.version}, 0, '${migration.name}');`,
    );
  }
  return `${parts.join('\n\n')}\n`;
}
