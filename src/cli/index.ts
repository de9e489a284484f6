#!/usr/bin/env node
// `nest-workflows`: applies or prints the SQL stores' migrations.
//
//   nest-workflows migrate --postgres <url> [--schema <name>]
//   nest-workflows sql --postgres [--schema <name>]
import { explainConnectionError } from '../postgres/connection-error.js';
import { fromPg, type PgPoolLike } from '../postgres/from-pg.js';
import { migratePostgres, postgresMigrationSql } from '../postgres/postgres-migrate.js';
import { DEFAULT_SCHEMA } from '../sql/schema-name.js';

const USAGE = `Usage:
  nest-workflows migrate --postgres <url> [--schema <name>]
      Applies the pending migrations of the PostgreSQL store to the database at <url>
      (postgres://user:password@host:5432/database), under a lock, and records them.
      Without <url>, connects with the PG* environment variables (PGHOST, PGDATABASE...).
  nest-workflows sql --postgres [--schema <name>]
      Prints every migration as one SQL script, for your own migration tool.

Options:
  --schema <name>   The store's schema (default "${DEFAULT_SCHEMA}"): lowercase letters, digits and
                    underscores, not starting with a digit, at most 40 characters.
  --help            Shows this help.`;

/** A mistake in the command line: printed with the usage, exit code 2. */
class UsageError extends Error {}

interface Command {
  name: 'migrate' | 'sql' | 'help';
  postgres: boolean;
  url: string | undefined;
  schema: string;
}

function parse(argv: readonly string[]): Command {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    return { name: 'help', postgres: false, url: undefined, schema: DEFAULT_SCHEMA };
  }
  const [name, ...rest] = argv;
  if (name !== 'migrate' && name !== 'sql') throw new UsageError(`Unknown command ${JSON.stringify(name)}.`);
  const command: Command = { name, postgres: false, url: undefined, schema: DEFAULT_SCHEMA };
  for (let i = 0; i < rest.length; i++) {
    const [flag, inline] = splitFlag(rest[i]!);
    const value = () => {
      if (inline !== undefined) return inline;
      const next = rest[i + 1];
      if (next === undefined || next.startsWith('--')) return undefined;
      i++;
      return next;
    };
    if (flag === '--postgres') {
      command.postgres = true;
      command.url = value();
    } else if (flag === '--schema') {
      const schema = value();
      if (schema === undefined) throw new UsageError('--schema needs a name.');
      command.schema = schema;
    } else if (flag === '--mysql') {
      throw new UsageError('--mysql is not available in this version: only --postgres is.');
    } else {
      throw new UsageError(`Unknown option ${JSON.stringify(rest[i])}.`);
    }
  }
  if (!command.postgres) throw new UsageError(`${name} needs a database: --postgres.`);
  if (name === 'sql' && command.url !== undefined) {
    throw new UsageError('sql prints the SQL without connecting: give --postgres without a URL.');
  }
  return command;
}

function splitFlag(arg: string): [string, string | undefined] {
  const equals = arg.indexOf('=');
  return arg.startsWith('--') && equals > 0 ? [arg.slice(0, equals), arg.slice(equals + 1)] : [arg, undefined];
}

/** `pg`, loaded only when a command connects (it is an optional peer dependency). */
async function loadPg(): Promise<{ Pool: new (config: object) => PgPoolLike & { end(): Promise<void> } }> {
  try {
    const module = (await import('pg')) as unknown as { default?: unknown; Pool?: unknown };
    return (module.default ?? module) as Awaited<ReturnType<typeof loadPg>>;
  } catch (error) {
    throw new Error(`nest-workflows migrate --postgres needs the 'pg' package: npm install pg (${(error as Error).message})`, {
      cause: error,
    });
  }
}

/** The URL without its password, for messages. */
function redact(url: string | undefined): string {
  if (url === undefined) return 'the database from the PG* environment variables';
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given URL';
  }
}

async function migrate(command: Command, out: (line: string) => void): Promise<void> {
  // Validate the schema before connecting, so a typo fails fast.
  postgresMigrationSql(command.schema);
  const { Pool } = await loadPg();
  const pool = new Pool(command.url === undefined ? { max: 2 } : { connectionString: command.url, max: 2 });
  try {
    const applied = await migratePostgres(fromPg(pool), command.schema).catch((error: unknown) => {
      throw explainConnectionError(error, command.schema);
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

/** Runs the CLI with `argv` (without `node` and the script); resolves to the exit code. */
export async function main(
  argv: readonly string[],
  io: { out: (line: string) => void; err: (line: string) => void } = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
): Promise<number> {
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
    else if (command.name === 'sql') io.out(postgresMigrationSql(command.schema).trimEnd());
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
