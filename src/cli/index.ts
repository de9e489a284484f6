#!/usr/bin/env node
// `nest-workflows`: applies or prints the SQL stores' migrations, re-encrypts, and acts on instances.
//
//   nest-workflows migrate --postgres <url> | --mysql <url> | --sqlite <file> [--schema <name>]
//   nest-workflows sql --postgres | --mysql | --sqlite [--schema <name>]
//   nest-workflows reencrypt --postgres <url> | --mysql <url> | --sqlite <file> --codecs <file> [--schema <name>] [--batch-size <n>] [--resume <cursor>]
//   nest-workflows export-history <id> | --out <dir> [filter] --postgres <url> | --mysql <url> | --sqlite <file> (export-history-command.ts)
//   nest-workflows list | show | pause | resume | cancel | terminate | retry | fork <database> ... (operator-commands.ts)
import { explainConnectionError } from '../postgres/connection-error.js';
import { fromPg } from '../postgres/from-pg.js';
import { checkUrl, loadMysql2, loadPg, redact, splitFlag, UsageError } from './cli-support.js';
import { OPERATOR_COMMANDS, runOperatorCommand } from './operator-commands.js';
import { migratePostgres, postgresMigrationSql } from '../postgres/postgres-migrate.js';
import { reencryptPostgres } from '../postgres/postgres-reencrypt.js';
import type { WorkflowReencryptCursor, WorkflowReencryptProgress } from '../storage/payload-reencryption.js';
import { describeProgress, loadCodecs, parseCursor, reportResult } from './reencrypt-command.js';
import { reencryptMysql } from '../mysql/mysql-reencrypt.js';
import { explainMysqlConnectionError } from '../mysql/connection-error.js';
import { fromMysql2 } from '../mysql/from-mysql2.js';
import { migrateMysql, mysqlMigrationScript } from '../mysql/mysql-migrate.js';
import { DEFAULT_SCHEMA } from '../sql/schema-name.js';
import { migrateSqlite, sqliteMigrationScript } from '../sqlite/sqlite-migrate.js';
import { reencryptSqlite } from '../sqlite/sqlite-reencrypt.js';
import { EXPORT_HISTORY_USAGE, exportHistoryCommand } from './export-history-command.js';

const USAGE = `Usage:
  nest-workflows migrate --postgres <url> [--schema <name>]
      Applies the pending migrations of the PostgreSQL store to the database at <url>
      (postgres://user:password@host:5432/database), under a lock, and records them.
      Without <url>, connects with the PG* environment variables (PGHOST, PGDATABASE...).
  nest-workflows migrate --mysql <url> [--schema <name>]
      Applies the pending migrations of the MySQL / MariaDB store to the database at <url>
      (mysql://user:password@host:3306/database), statement by statement under a named lock,
      and records them; a run stopped halfway resumes.
  nest-workflows migrate --sqlite <file> [--schema <name>]
      Applies the pending migrations of the SQLite store to the database file <file> (created if
      missing), in one transaction, and records them.
  nest-workflows sql --postgres | --mysql | --sqlite [--schema <name>]
      Prints every migration as one SQL script, for your own migration tool.
  nest-workflows reencrypt --postgres <url> | --mysql <url> | --sqlite <file> --codecs <file> [--schema <name>] [--batch-size <n>] [--resume <cursor>]
      After a key rotation: rewrites every stored payload not under the current codec (the first
      of the list <file> exports) with it, in batches, safely beside running workers. Prints
      progress; exits 0 once nothing is left under an older codec (remove those from your codec
      list then), 1 if some payload could not be read or kept changing (run it again).
${EXPORT_HISTORY_USAGE}

  nest-workflows list | show | pause | resume | cancel | terminate | retry | fork --postgres <url> | --mysql <url> | --sqlite <file> ...
      Lists and shows instances; pauses, resumes, cancels, terminates or retries one or every
      instance a filter matches; forks an instance from a step. No application code needed; --json for scripts.
      "nest-workflows <command> --help" says more.

Options:
  --codecs <file>   A module exporting the codec list, current first (default export, or "codecs"):
                    export default [new AesGcmPayloadCodec({ key: process.env.KEY_NEW, id: '2026-12' }), ...].
  --batch-size <n>  Instances, signals or schedules per batch (default 100, at most 1000).
  --resume <cursor> Carry on from the cursor a progress line printed.
  --schema <name>   The store's schema (PostgreSQL) or table prefix (MySQL, SQLite), default
                    "${DEFAULT_SCHEMA}": lowercase letters, digits and
                    underscores, not starting with a digit, at most 40 characters.
  --help, -h        Shows this help.
  --version, -v     Prints the version of @nestjs/workflows.`;

/** Replaced by the build (tsup's and vitest's `define`) with package.json's version. */
declare const __PACKAGE_VERSION__: string;

interface Command {
  name: 'migrate' | 'sql' | 'reencrypt' | 'help' | 'version';
  database: 'postgres' | 'mysql' | 'sqlite' | undefined;
  url: string | undefined;
  schema: string;
  codecs?: string;
  batchSize?: number;
  resume?: WorkflowReencryptCursor;
}

function parse(argv: readonly string[]): Command {
  if (argv.length === 0) throw new UsageError('No command given.');
  if (argv.includes('--help') || argv.includes('-h'))
    return { name: 'help', database: undefined, url: undefined, schema: DEFAULT_SCHEMA };
  if (argv[0] === '--version' || argv[0] === '-v') {
    if (argv.length > 1) throw new UsageError(`${argv[0]} takes nothing more.`);
    return { name: 'version', database: undefined, url: undefined, schema: DEFAULT_SCHEMA };
  }
  const [name, ...rest] = argv;
  if (name !== 'migrate' && name !== 'sql' && name !== 'reencrypt')
    throw new UsageError(`Unknown command ${JSON.stringify(name)}.`);
  const command: Command = { name, database: undefined, url: undefined, schema: DEFAULT_SCHEMA };
  for (let i = 0; i < rest.length; i++) {
    const [flag, inline] = splitFlag(rest[i]!);
    const value = () => {
      if (inline !== undefined) return inline;
      const next = rest[i + 1];
      if (next === undefined || next.startsWith('--')) return undefined;
      i++;
      return next;
    };
    if (flag === '--postgres' || flag === '--mysql' || flag === '--sqlite') {
      const database = flag.slice(2) as 'postgres' | 'mysql' | 'sqlite';
      if (command.database !== undefined && command.database !== database)
        throw new UsageError('Give one database: --postgres, --mysql or --sqlite.');
      command.database = database;
      command.url = value();
    } else if (flag === '--schema') {
      const schema = value();
      if (schema === undefined) throw new UsageError('--schema needs a name.');
      command.schema = schema;
    } else if (name === 'reencrypt' && flag === '--codecs') {
      command.codecs = value();
      if (command.codecs === undefined)
        throw new UsageError('--codecs needs the path of a module exporting the codec list.');
    } else if (name === 'reencrypt' && flag === '--batch-size') {
      const size = Number(value());
      if (!Number.isInteger(size) || size < 1 || size > 1000)
        throw new UsageError('--batch-size needs a whole number from 1 to 1000.');
      command.batchSize = size;
    } else if (name === 'reencrypt' && flag === '--resume') {
      const cursor = value();
      if (cursor === undefined) throw new UsageError('--resume needs the cursor a progress line printed.');
      try {
        command.resume = parseCursor(cursor);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
    } else {
      throw new UsageError(`Unknown option ${JSON.stringify(rest[i])}.`);
    }
  }
  if (command.database === undefined)
    throw new UsageError(`${name} needs a database: --postgres, --mysql or --sqlite.`);
  if (name === 'reencrypt' && command.codecs === undefined)
    throw new UsageError('reencrypt needs the codecs: --codecs <file>.');
  if (name === 'sql' && command.url !== undefined) {
    throw new UsageError(`sql prints the SQL without connecting: give --${command.database} without a URL.`);
  }
  if (name !== 'sql' && command.database === 'mysql' && command.url === undefined) {
    throw new UsageError(`${name} --mysql needs the database URL: --mysql mysql://user:password@host:3306/database.`);
  }
  if (name !== 'sql' && command.database === 'sqlite' && command.url === undefined) {
    throw new UsageError(`${name} --sqlite needs the database file: --sqlite ./workflows.db.`);
  }
  if (command.url !== undefined && command.database !== 'sqlite') checkUrl(command.database, command.url);
  return command;
}

async function migrate(command: Command, out: (line: string) => void): Promise<void> {
  if (command.database === 'mysql') return migrateMysqlDatabase(command, out);
  if (command.database === 'sqlite') {
    const applied = await migrateSqlite(command.url!, command.schema);
    out(
      applied.length === 0
        ? `Tables "${command.schema}_*" in ${command.url} are up to date.`
        : `Tables "${command.schema}_*" in ${command.url}: applied ${applied.join(', ')}.`,
    );
    return;
  }
  // Validate the schema before connecting, so a typo fails fast.
  postgresMigrationSql(command.schema);
  const { Pool } = await loadPg();
  const pool = new Pool(
    command.url === undefined
      ? { max: 2, connectionTimeoutMillis: 10_000 }
      : { connectionString: command.url, max: 2, connectionTimeoutMillis: 10_000 },
  );
  // An idle connection the server drops (a restart) is reported on the pool: without a listener
  // Node would end the process on it. The statement that needs a connection reports the failure.
  pool.on('error', () => undefined);
  try {
    const executor = fromPg(pool);
    const applied = await migratePostgres(executor, command.schema).catch((error: unknown) => {
      throw explainConnectionError(error, command.schema, executor.target, null);
    });
    out(
      applied.length === 0
        ? `Schema "${command.schema}" on ${redact(command.url)} is up to date.`
        : `Schema "${command.schema}" on ${redact(command.url)}: applied ${applied.join(', ')}.`,
    );
  } finally {
    await pool.end();
  }
}

async function migrateMysqlDatabase(command: Command, out: (line: string) => void): Promise<void> {
  // Validate the schema before connecting, so a typo fails fast.
  mysqlMigrationScript(command.schema);
  const { createPool } = await loadMysql2();
  const pool = createPool({ uri: command.url, connectionLimit: 2 });
  try {
    const executor = fromMysql2(pool);
    const applied = await migrateMysql(executor, command.schema).catch((error: unknown) => {
      throw explainMysqlConnectionError(error, command.schema, executor.target, null);
    });
    out(
      applied.length === 0
        ? `Tables "${command.schema}_*" on ${redact(command.url)} are up to date.`
        : `Tables "${command.schema}_*" on ${redact(command.url)}: applied ${applied.join(', ')}.`,
    );
  } finally {
    await pool.end();
  }
}

async function reencrypt(command: Command, out: (line: string) => void): Promise<number> {
  const mysql = command.database === 'mysql';
  // Validate the schema before connecting, so a typo fails fast.
  if (mysql) mysqlMigrationScript(command.schema);
  else if (command.database === 'sqlite') sqliteMigrationScript(command.schema);
  else postgresMigrationSql(command.schema);
  const codecs = await loadCodecs(command.codecs!);
  const options = {
    batchSize: command.batchSize,
    resumeFrom: command.resume,
    onProgress: (progress: WorkflowReencryptProgress) => out(describeProgress(progress)),
  };
  if (command.database === 'sqlite') {
    const result = await reencryptSqlite(command.url!, command.schema, codecs, options);
    return reportResult(result, codecs[0]!.id, `tables "${command.schema}_*" in ${command.url}`, out);
  }
  if (mysql) {
    const { createPool } = await loadMysql2();
    const pool = createPool({ uri: command.url, connectionLimit: 4 });
    try {
      const executor = fromMysql2(pool);
      const result = await reencryptMysql(executor, command.schema, codecs, options).catch((error: unknown) => {
        throw explainMysqlConnectionError(error, command.schema, executor.target, null);
      });
      return reportResult(result, codecs[0]!.id, `tables "${command.schema}_*"`, out);
    } finally {
      await pool.end();
    }
  }
  const { Pool } = await loadPg();
  const pool = new Pool(command.url === undefined ? { max: 4 } : { connectionString: command.url, max: 4 });
  pool.on('error', () => undefined);
  try {
    const executor = fromPg(pool);
    const result = await reencryptPostgres(executor, command.schema, codecs, options).catch((error: unknown) => {
      throw explainConnectionError(error, command.schema, executor.target, null);
    });
    return reportResult(result, codecs[0]!.id, `schema "${command.schema}"`, out);
  } finally {
    await pool.end();
  }
}

/** Runs the CLI with `argv` (without `node` and the script); resolves to the exit code. */
export async function main(
  argv: readonly string[],
  io: { out: (line: string) => void; err: (line: string) => void } = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
): Promise<number> {
  if (argv[0] !== undefined && OPERATOR_COMMANDS.has(argv[0])) return runOperatorCommand(argv, io);
  if (argv[0] === 'export-history' && !argv.includes('--help') && !argv.includes('-h'))
    return exportHistoryCommand(argv.slice(1), io);
  let command: Command;
  try {
    command = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`nest-workflows: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  try {
    if (command.name === 'help') io.out(USAGE);
    else if (command.name === 'version') io.out(__PACKAGE_VERSION__);
    else if (command.name === 'sql') {
      const script = { postgres: postgresMigrationSql, mysql: mysqlMigrationScript, sqlite: sqliteMigrationScript };
      io.out(script[command.database!](command.schema).trimEnd());
    } else if (command.name === 'reencrypt') return await reencrypt(command, io.out);
    else await migrate(command, io.out);
    return 0;
  } catch (error) {
    io.err(`nest-workflows ${command.name}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

// Run when executed as the bin (not when a test imports `main`).
const entry = process.argv[1] ?? '';
if (/nest-workflows$|[\\/]cli[\\/]index\.(c?js|ts)$/.test(entry)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
