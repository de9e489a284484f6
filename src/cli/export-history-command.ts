// `nest-workflows export-history`: instance histories as JSON files, read from a store given by
// connection options as `migrate` takes them. Reads only (the store is opened with `migrate: false`).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exportHistories, exportHistory, type WorkflowHistoryFilter } from '../client/history-export.js';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { fromMysql2, type Mysql2PoolLike } from '../mysql/from-mysql2.js';
import { withMySqlReading } from '../mysql/mysql-reading-session.js';
import { fromPg, type PgPoolLike } from '../postgres/from-pg.js';
import { withPostgresReading } from '../postgres/postgres-reading-session.js';
import { DEFAULT_SCHEMA } from '../sql/schema-name.js';
import { withSqliteReading } from '../sqlite/sqlite-reading-session.js';
import {
  FINISHED_STATUSES,
  PAUSED_STATUS,
  UNFINISHED_STATUSES,
  type WorkflowStatus,
} from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { loadCodecs } from './reencrypt-command.js';

/** The command's lines of the CLI's usage text. */
export const EXPORT_HISTORY_USAGE = `  nest-workflows export-history <id> --postgres <url> | --mysql <url> | --sqlite <file> [--schema <name>] [--codecs <file>] [--out <file>]
      Prints the history of instance <id> as JSON (or writes it to <file>): the instance, its
      journal, the signals it took; payloads decoded with --codecs. For replayHistory() in tests.
  nest-workflows export-history --postgres <url> | ... --out <dir> [--workflow <name>] [--version <n>] [--status <s>,...] [--limit <n>]
      Writes the history of every matching instance as <dir>/<id>.json (ids URL-encoded), oldest first.`;

const STATUSES: readonly string[] = [...UNFINISHED_STATUSES, PAUSED_STATUS, ...FINISHED_STATUSES];

interface ExportCommand {
  id?: string;
  database?: 'postgres' | 'mysql' | 'sqlite';
  url?: string;
  schema: string;
  codecs?: string;
  out?: string;
  filter: WorkflowHistoryFilter;
}

/** A command line the command can't run: the message says what to give instead (exit code 2). */
class ExportUsageError extends Error {}

function parse(argv: readonly string[]): ExportCommand {
  const command: ExportCommand = { schema: DEFAULT_SCHEMA, filter: {} };
  let filtered = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const equals = arg.indexOf('=');
    const [flag, inline] = arg.startsWith('--') && equals > 0 ? [arg.slice(0, equals), arg.slice(equals + 1)] : [arg];
    const value = (what: string): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new ExportUsageError(`${flag} needs ${what}.`);
      i++;
      return next;
    };
    if (flag === '--postgres' || flag === '--mysql' || flag === '--sqlite') {
      if (command.database !== undefined)
        throw new ExportUsageError('Give one database: --postgres, --mysql or --sqlite.');
      command.database = flag.slice(2) as ExportCommand['database'];
      // Without a URL, --postgres connects with the PG* variables: what follows is then the id.
      const next = inline ?? argv[i + 1];
      const isUrl = flag !== '--postgres' || /^postgres(ql)?:\/\//.test(next ?? '');
      if (inline !== undefined || (next !== undefined && !next.startsWith('--') && isUrl)) {
        command.url = next;
        if (inline === undefined) i++;
      }
    } else if (flag === '--schema') command.schema = value('a name');
    else if (flag === '--codecs') command.codecs = value('the path of a module exporting the codec list');
    else if (flag === '--out') command.out = value('a file (one instance) or a directory (a filter)');
    else if (flag === '--workflow') {
      filtered = true;
      command.filter.workflow = value('a workflow name');
    } else if (flag === '--version') {
      filtered = true;
      const version = Number(value('a version number'));
      if (!Number.isInteger(version)) throw new ExportUsageError('--version needs a whole number.');
      command.filter.version = version;
    } else if (flag === '--status') {
      filtered = true;
      const statuses = value('one status or several, comma-separated').split(',');
      const unknown = statuses.find((status) => !STATUSES.includes(status));
      if (unknown !== undefined)
        throw new ExportUsageError(
          `--status ${JSON.stringify(unknown)} is no status; use one of ${STATUSES.join(', ')}.`,
        );
      command.filter.status = statuses as WorkflowStatus[];
    } else if (flag === '--limit') {
      filtered = true;
      const limit = Number(value('a number'));
      if (!Number.isInteger(limit) || limit < 1) throw new ExportUsageError('--limit needs a whole number above 0.');
      command.filter.limit = limit;
    } else if (!arg.startsWith('--') && command.id === undefined) command.id = arg;
    else throw new ExportUsageError(`Unknown option ${JSON.stringify(arg)}.`);
  }
  if (command.database === undefined)
    throw new ExportUsageError('export-history needs a database: --postgres, --mysql or --sqlite.');
  if (command.database !== 'postgres' && command.url === undefined)
    throw new ExportUsageError(
      `export-history --${command.database} needs the database ${command.database === 'sqlite' ? 'file' : 'URL'}.`,
    );
  if (command.id !== undefined && filtered)
    throw new ExportUsageError(
      'Give an instance id, or a filter (--workflow, --version, --status, --limit), not both.',
    );
  if (command.id === undefined && command.out === undefined)
    throw new ExportUsageError(
      'Without an instance id, export-history writes one file per instance: give --out <dir>.',
    );
  return command;
}

/** Runs `nest-workflows export-history` with the arguments after the command name; resolves to the exit code. */
export async function exportHistoryCommand(
  argv: readonly string[],
  io: { out: (line: string) => void; err: (line: string) => void },
): Promise<number> {
  let command: ExportCommand;
  try {
    command = parse(argv);
  } catch (error) {
    if (!(error instanceof ExportUsageError)) throw error;
    io.err(`nest-workflows export-history: ${error.message}\n\nUsage:\n${EXPORT_HISTORY_USAGE}`);
    return 2;
  }
  try {
    const codecs = command.codecs === undefined ? null : await loadCodecs(command.codecs);
    await withStorage(command, codecs, async (storage) => {
      if (command.id !== undefined) {
        const text = `${JSON.stringify(await exportHistory(storage, command.id, Date.now()), null, 2)}\n`;
        if (command.out === undefined) io.out(text.trimEnd());
        else await writeFile(command.out, text);
        return;
      }
      const dir = command.out!;
      await mkdir(dir, { recursive: true });
      const count = await exportHistories(storage, command.filter, Date.now, (history) =>
        writeFile(
          join(dir, `${encodeURIComponent(history.instance.id)}.json`),
          `${JSON.stringify(history, null, 2)}\n`,
        ),
      );
      io.out(`Exported ${count} ${count === 1 ? 'history' : 'histories'} to ${dir}.`);
    });
    return 0;
  } catch (error) {
    io.err(`nest-workflows export-history: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

async function withStorage(
  command: ExportCommand,
  codecs: WorkflowPayloadCodec[] | null,
  read: (storage: WorkflowStorage) => Promise<void>,
): Promise<void> {
  if (command.database === 'sqlite') return withSqliteReading(command.url!, command.schema, codecs, read);
  if (command.database === 'mysql') {
    const mysql = (await importDriver('mysql2/promise')) as {
      createPool(config: object): Mysql2PoolLike & { end(): Promise<void> };
    };
    const pool = mysql.createPool({ uri: command.url, connectionLimit: 2 });
    try {
      return await withMySqlReading(fromMysql2(pool), command.schema, codecs, read);
    } finally {
      await pool.end();
    }
  }
  const pg = (await importDriver('pg')) as {
    Pool: new (
      config: object,
    ) => PgPoolLike & { end(): Promise<void>; on(event: 'error', listener: () => void): unknown };
  };
  const pool = new pg.Pool(command.url === undefined ? { max: 2 } : { connectionString: command.url, max: 2 });
  // An idle connection the server drops is reported on the pool; the next statement reports the failure.
  pool.on('error', () => undefined);
  try {
    return await withPostgresReading(fromPg(pool), command.schema, codecs, read);
  } finally {
    await pool.end();
  }
}

/** A driver, loaded only when the command connects (each is an optional peer dependency). */
async function importDriver(name: 'pg' | 'mysql2/promise'): Promise<unknown> {
  try {
    const module = (await import(name)) as { default?: unknown };
    return module.default ?? module;
  } catch (error) {
    const pkg = name === 'pg' ? 'pg' : 'mysql2';
    throw new Error(`export-history needs the '${pkg}' package: npm install ${pkg} (${(error as Error).message})`, {
      cause: error,
    });
  }
}
