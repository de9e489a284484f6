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

/**
 * A column or an index a migration statement adds, or an index it rebuilds with other columns
 * (`columns`, comma-separated as `information_schema` lists them), which `information_schema` can
 * say is there.
 */
export interface SchemaObject {
  kind: 'column' | 'index';
  /** The table's name as stored (`<schema>_instances`), unquoted. */
  table: string;
  name: string;
  /** A rebuilt index: its columns after the statement, in order. */
  columns?: string;
}

const ADD_COLUMN = /^ALTER TABLE `([^`]+)` ADD COLUMN `?(\w+)`? [^,;]+$/i;
const CREATE_INDEX = /^CREATE INDEX `?(\w+)`? ON `([^`]+)` \([^;]+\)$/i;
const REBUILD_INDEX = /^ALTER TABLE `([^`]+)` DROP INDEX `?(\w+)`?, ADD INDEX `?(\w+)`? \(([\w, ]+)\)$/i;

/**
 * The one column (`ALTER TABLE t ADD COLUMN c ...`) or index (`CREATE INDEX i ON t (...)`) a
 * statement adds, or the index it rebuilds under its name (`ALTER TABLE t DROP INDEX i, ADD INDEX
 * i (...)`, one statement, so the index is never missing), else `null`. Such a statement can't run
 * twice (or, a rebuild, shouldn't) and can't say IF NOT EXISTS on both servers (MariaDB has it,
 * MySQL 8.0 doesn't), so the runner checks for what it makes first: every statement of a migration
 * is either `CREATE TABLE IF NOT EXISTS`, `INSERT IGNORE` of fixed rows, or one of these (a test
 * holds the shipped files to it).
 */
export function addedObject(statement: string): SchemaObject | null {
  const column = ADD_COLUMN.exec(statement);
  if (column) return { kind: 'column', table: column[1]!, name: column[2]! };
  const index = CREATE_INDEX.exec(statement);
  if (index) return { kind: 'index', table: index[2]!, name: index[1]! };
  const rebuilt = REBUILD_INDEX.exec(statement);
  if (rebuilt && rebuilt[2] === rebuilt[3]) {
    const columns = rebuilt[4]!.split(',').map((column) => column.trim());
    return { kind: 'index', table: rebuilt[1]!, name: rebuilt[2]!, columns: columns.join(',') };
  }
  return null;
}

/**
 * How `information_schema` is asked whether `object` is there: a count, `?` for table and name (and
 * a rebuilt index's columns, `existsParams()`).
 */
function existsQuery(object: SchemaObject): string {
  if (object.kind === 'column')
    return 'SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?';
  if (object.columns === undefined)
    return 'SELECT COUNT(*) AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?';
  return (
    'SELECT COUNT(*) AS n FROM (SELECT GROUP_CONCAT(column_name ORDER BY seq_in_index) AS c FROM information_schema.statistics ' +
    'WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?) AS listed WHERE c = ?'
  );
}

/** `existsQuery(object)`'s parameters. */
function existsParams(object: SchemaObject): string[] {
  return object.columns === undefined ? [object.table, object.name] : [object.table, object.name, object.columns];
}

/** A SQL string literal of `text` (for the printed script, whose values are ours: a schema name, our statements). */
function literal(text: string): string {
  return `'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/**
 * `statement` for a script a person (or their migration tool) runs: as it is, or, when it adds a
 * column or an index, run through a prepared statement only while `information_schema` doesn't
 * list what it adds, so the whole script may run again.
 */
function scriptStatement(statement: string): string {
  const object = addedObject(statement);
  if (!object) return `${statement};`;
  const exists = existsParams(object).reduce((text, value) => text.replace('?', literal(value)), existsQuery(object));
  return [
    `SET @nest_workflows_ddl = IF((${exists}) = 0, ${literal(statement)}, 'DO 0');`,
    'PREPARE nest_workflows_ddl FROM @nest_workflows_ddl;',
    'EXECUTE nest_workflows_ddl;',
    'DEALLOCATE PREPARE nest_workflows_ddl;',
  ].join('\n');
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
 * together migrate once. The statement a stopped run executed but did not record runs again: `CREATE TABLE IF NOT EXISTS` and `INSERT IGNORE` do nothing then, and a column or an index that
 * `information_schema` lists already (`addedObject()`) is recorded without being added again.
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
      const { rows } = await executor.query(`SELECT step FROM ${history} WHERE version = ? AND step > 0`, [
        migration.version,
      ]);
      const done = new Set(rows.map((row) => Number(row.step)));
      for (const [index, statement] of statements.entries()) {
        if (done.has(index + 1)) continue;
        // A run stopped after this statement and before its record left the column or index in
        // place: record it without adding it again (which would fail).
        const object = addedObject(statement);
        const there = object
          ? Number((await executor.query(existsQuery(object), existsParams(object))).rows[0]?.n ?? 0) > 0
          : false;
        if (!there) await executor.query(statement);
        await executor.query(`INSERT INTO ${history} (version, step, name) VALUES (?, ?, ?)`, [
          migration.version,
          index + 1,
          migration.name,
        ]);
      }
      await executor.query(`INSERT INTO ${history} (version, step, name) VALUES (?, 0, ?)`, [
        migration.version,
        migration.name,
      ]);
    },
  };
}

/**
 * Every migration as one SQL script for the given schema name, for users who apply migrations with
 * their own tool: creates the history table, then runs and records each migration (so a store with
 * `migrate: false` finds the tables current). Every statement may run again (a column or an index
 * is added through a prepared statement only while `information_schema` doesn't list it), so a
 * script stopped halfway can simply be run again.
 */
export function mysqlMigrationSql(schema: string): string {
  const history = quoteMysqlIdentifier(`${schema}_migrations`);
  const parts = [
    `-- @nestjs/workflows: the MySQL / MariaDB tables ${schema}_* (${MYSQL_MIGRATIONS.length} migration(s)).`,
    `-- The store records each migration in ${history}. Every statement may run again: a column or an\n` +
      "-- index is added through a prepared statement only while information_schema doesn't list it\n" +
      '-- (MySQL 8.0 has no ADD COLUMN / CREATE INDEX IF NOT EXISTS).',
    `${historyTable(schema)};`,
  ];
  for (const migration of MYSQL_MIGRATIONS) {
    parts.push(
      `-- ${migrationLabel(migration)}`,
      ...migrationStatements(renderMigration(migration.sql, schema)).map(scriptStatement),
      `INSERT IGNORE INTO ${history} (version, step, name) VALUES (${migration.version}, 0, '${migration.name}');`,
    );
  }
  return `${parts.join('\n\n')}\n`;
}
