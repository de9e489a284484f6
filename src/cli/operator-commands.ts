import { actOnMatching, inStorePages, oneAtATime } from '../client/bulk-actions.js';
import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';
import { parseBulkFilter, type WorkflowBulkFilter, type WorkflowBulkResult } from '../client/bulk-request.js';
import { cancelRefused, parseCancelRequest } from '../client/cancel-request.js';
import { forkInstance, type WorkflowForkOptions } from '../client/instance-fork.js';
import { KNOWN_STATUSES, parseListRequest } from '../client/list-request.js';
import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import { retryInstance } from '../engine/retry-reopen.js';
import { WorkflowInvalidStateError } from '../errors/workflow-invalid-state.error.js';
import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { explainMysqlConnectionError } from '../mysql/connection-error.js';
import { fromMysql2 } from '../mysql/from-mysql2.js';
import { operateMysql } from '../mysql/mysql-operate.js';
import { explainConnectionError } from '../postgres/connection-error.js';
import { fromPg } from '../postgres/from-pg.js';
import { operatePostgres } from '../postgres/postgres-operate.js';
import { DEFAULT_SCHEMA } from '../sql/schema-name.js';
import { operateSqlite } from '../sqlite/sqlite-operate.js';
import { FINISHED_STATUSES, type WorkflowInstance, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { checkUrl, loadMysql2, loadPg, splitFlag, UsageError } from './cli-support.js';
import { loadCodecs } from './reencrypt-command.js';

type OperatorName = 'list' | 'show' | 'pause' | 'resume' | 'cancel' | 'terminate' | 'retry' | 'fork';

/** The commands that act on a store's instances, without the application's code. */
export const OPERATOR_COMMANDS: ReadonlySet<string> = new Set<OperatorName>([
  'list',
  'show',
  'pause',
  'resume',
  'cancel',
  'terminate',
  'retry',
  'fork',
]);

const DATABASE_HELP = `Database (one of):
  --postgres <url>      postgres://user:password@host:5432/database (without <url>: the PG* variables)
  --mysql <url>         mysql://user:password@host:3306/database (MySQL 8.0+, MariaDB 10.6+)
  --sqlite <file>       the SQLite database file
  --schema <name>       the store's schema or table prefix (default "${DEFAULT_SCHEMA}")
  --codecs <file>       a module exporting the payload codecs (as for reencrypt), to read encrypted payloads
  --json                prints JSON for scripts instead of text`;

const FILTER_HELP = `Filter (every one given must hold; instead of an <id>):
  --status <s>[,<s>]    ${KNOWN_STATUSES.join(', ')}
  --workflow <name>     --version <n>          --id-prefix <prefix>     --ids <id>[,<id>...]
  --created-after <t>   --created-before <t>   (ISO 8601 or epoch ms)
  --all                 needed when the filter leaves nothing out (or there is none)`;

const HELP: Record<OperatorName, string> = {
  list: `Usage: nest-workflows list <database> [--status <s>] [--workflow <name>] [--version <n>] [--id-prefix <p>]
                          [--created-after <t>] [--created-before <t>] [--limit <n>] [--json]
  Lists instances, oldest first (at most --limit, default 100, up to 1000).

${DATABASE_HELP}`,
  show: `Usage: nest-workflows show <database> <id> [--journal] [--json]
  Shows one instance: its status, error, waits, where it was forked from and, with --journal, its journal.

${DATABASE_HELP}`,
  pause: `Usage: nest-workflows pause <database> (<id> | <filter>) [--reason <text>] [--json]
  Pauses: no process claims the instance until it is resumed; one running stops at its next step.
  With a filter, every unfinished instance it matches that is not paused yet.

${DATABASE_HELP}

${FILTER_HELP}`,
  resume: `Usage: nest-workflows resume <database> (<id> | <filter>) [--json]
  Resumes paused instances: what fell due during the pause is due at once.

${DATABASE_HELP}

${FILTER_HELP}`,
  cancel: `Usage: nest-workflows cancel <database> (<id> | <filter>) [--reason <text>] [--json]
  Cancels: each instance stops at its next step and runs its compensations. With a filter, every
  unfinished instance it matches, in batches; prints how many matched and how many took the cancel.

${DATABASE_HELP}

${FILTER_HELP}`,
  terminate: `Usage: nest-workflows terminate <database> (<id> | <filter>) [--reason <text>] [--json]
  Terminates: each instance ends cancelled at once, without compensations. With a filter, as cancel.

${DATABASE_HELP}

${FILTER_HELP}`,
  retry: `Usage: nest-workflows retry <database> (<id> | <filter>) [--json]
  Runs failed, cancelled or compensation_failed instances again from where they stopped. With a
  filter, every such instance it matches; the application's workers run them.

${DATABASE_HELP}

${FILTER_HELP}`,
  fork: `Usage: nest-workflows fork <database> <id> [--from-step <name>] [--id <new id>] [--input <json>] [--version <n>] [--json]
  Makes a new instance of the same workflow whose journal is the source's before --from-step (that
  step and everything after it run again; without it, from the top). The source is not changed.

${DATABASE_HELP}`,
};

/** What the command line asked, checked. */
interface OperatorCommand {
  name: OperatorName;
  database: 'postgres' | 'mysql' | 'sqlite' | undefined;
  url: string | undefined;
  schema: string;
  codecs?: string;
  json: boolean;
  id?: string;
  filter: WorkflowBulkFilter;
  hasFilter: boolean;
  limit?: number;
  reason?: string;
  journal: boolean;
  fork: WorkflowForkOptions;
}

/** Which flags each command takes, besides the database's. */
const FILTER_FLAGS = [
  '--status',
  '--workflow',
  '--version',
  '--id-prefix',
  '--ids',
  '--created-after',
  '--created-before',
  '--all',
];
const FLAGS: Record<OperatorName, readonly string[]> = {
  list: ['--status', '--workflow', '--version', '--id-prefix', '--created-after', '--created-before', '--limit'],
  show: ['--journal'],
  pause: [...FILTER_FLAGS, '--reason'],
  resume: FILTER_FLAGS,
  cancel: [...FILTER_FLAGS, '--reason'],
  terminate: [...FILTER_FLAGS, '--reason'],
  retry: FILTER_FLAGS,
  fork: ['--from-step', '--id', '--input', '--version'],
};
const SWITCHES = new Set(['--json', '--journal', '--all']);

/** The commands that take an id or a filter. */
const ACTIONS: ReadonlySet<OperatorName> = new Set<OperatorName>(['pause', 'resume', 'cancel', 'terminate', 'retry']);

function parseOperator(argv: readonly string[]): OperatorCommand | 'help' {
  const name = argv[0] as OperatorName;
  const rest = argv.slice(1);
  if (rest.includes('--help') || rest.includes('-h')) return 'help';
  const command: OperatorCommand = {
    name,
    database: undefined,
    url: undefined,
    schema: DEFAULT_SCHEMA,
    json: false,
    filter: {},
    hasFilter: false,
    journal: false,
    fork: {},
  };
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [flag, inline] = splitFlag(arg);
    const optional = () => {
      if (inline !== undefined) return inline;
      const next = rest[i + 1];
      if (next === undefined || next.startsWith('--')) return undefined;
      i++;
      return next;
    };
    const value = () => {
      const given = optional();
      if (given === undefined) throw new UsageError(`${flag} needs a value.`);
      return given;
    };
    if (flag === '--postgres' || flag === '--mysql' || flag === '--sqlite') {
      const database = flag.slice(2) as 'postgres' | 'mysql' | 'sqlite';
      if (command.database !== undefined) throw new UsageError('Give one database: --postgres, --mysql or --sqlite.');
      command.database = database;
      command.url = optional();
    } else if (flag === '--schema') command.schema = value();
    else if (flag === '--codecs') command.codecs = value();
    else if (flag === '--json') command.json = true;
    else if (!FLAGS[name].includes(flag)) throw new UsageError(`${name} takes no option ${JSON.stringify(flag)}.`);
    else if (SWITCHES.has(flag)) {
      if (inline !== undefined) throw new UsageError(`${flag} takes no value.`);
      if (flag === '--journal') command.journal = true;
      else command.filter.all = true;
    } else parseValueFlag(command, flag, value());
  }
  if (command.database === undefined)
    throw new UsageError(`${name} needs a database: --postgres <url>, --mysql <url> or --sqlite <file>.`);
  if (command.database === 'mysql' && command.url === undefined)
    throw new UsageError(`${name} --mysql needs the database URL: --mysql mysql://user:password@host:3306/database.`);
  if (command.database === 'sqlite' && command.url === undefined)
    throw new UsageError(`${name} --sqlite needs the database file: --sqlite ./workflows.db.`);
  if (command.url !== undefined && command.database !== 'sqlite') checkUrl(command.database, command.url);
  if (positional.length > 1) throw new UsageError(`${name} takes one instance id; got ${positional.length}.`);
  command.id = positional[0];
  if (name === 'list' && command.id !== undefined) throw new UsageError('list takes no id: filter with --id-prefix.');
  if ((name === 'show' || name === 'fork') && command.id === undefined)
    throw new UsageError(`${name} needs the id of an instance.`);
  if (ACTIONS.has(name) && command.id !== undefined && command.hasFilter)
    throw new UsageError(`${name} takes an id or a filter, not both.`);
  if (ACTIONS.has(name) && command.id === undefined && !command.hasFilter)
    throw new UsageError(`${name} needs an instance id, or a filter (--status, --workflow, --ids... or --all).`);
  return command;
}

function parseValueFlag(command: OperatorCommand, flag: string, value: string): void {
  const { filter } = command;
  const whole = (what: string, min: number) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`${what} needs a whole number, ${min} or more.`);
    return n;
  };
  const time = () => {
    const at = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    if (!Number.isFinite(at)) throw new UsageError(`${flag} needs an ISO 8601 time or epoch milliseconds.`);
    return at;
  };
  if (command.name === 'fork') {
    if (flag === '--from-step') command.fork.fromStep = value;
    else if (flag === '--id') command.fork.id = value;
    else if (flag === '--version') command.fork.version = whole('--version', 1);
    else if (flag === '--input') {
      try {
        command.fork.input = JSON.parse(value) as unknown;
      } catch {
        throw new UsageError('--input needs JSON, such as \'{"order":42}\' (quote it for the shell).');
      }
    }
    return;
  }
  if (flag === '--reason') return void (command.reason = value);
  if (flag === '--limit') return void (command.limit = whole('--limit', 1));
  command.hasFilter = true;
  if (flag === '--status') filter.status = value.split(',') as WorkflowStatus[];
  else if (flag === '--workflow') filter.workflow = value;
  else if (flag === '--version') filter.version = whole('--version', 1);
  else if (flag === '--id-prefix') filter.idPrefix = value;
  else if (flag === '--ids') filter.ids = value.split(',').filter((id) => id !== '');
  else if (flag === '--created-after') filter.createdAfter = time();
  else if (flag === '--created-before') filter.createdBefore = time();
}

/**
 * Runs `list`, `show`, `cancel`, `terminate`, `retry` or `fork` (`argv[0]`) against the store the
 * options name, as the application's client would, without its code: no workflow needs to be
 * registered, and the application's workers run what these make due. Resolves to the exit code
 * (0 done, 1 refused or failed, 2 a mistake in the command line).
 */
export async function runOperatorCommand(
  argv: readonly string[],
  io: { out: (line: string) => void; err: (line: string) => void },
): Promise<number> {
  const name = argv[0] as OperatorName;
  let command: OperatorCommand | 'help';
  try {
    command = parseOperator(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`nest-workflows ${name}: ${error.message}\n\n${HELP[name]}`);
    return 2;
  }
  if (command === 'help') {
    io.out(HELP[name]);
    return 0;
  }
  try {
    const codecs = command.codecs === undefined ? null : await loadCodecs(command.codecs);
    const parsed = command;
    await withStorage(parsed, codecs, (storage) => run(parsed, storage, io.out));
    return 0;
  } catch (error) {
    io.err(`nest-workflows ${name}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

/** Opens the store the command names (a pool of its own for the SQL servers), runs `fn` on it, closes it. */
async function withStorage(
  command: OperatorCommand,
  codecs: readonly WorkflowPayloadCodec[] | null,
  fn: (storage: WorkflowStorage) => Promise<void>,
): Promise<void> {
  const { schema } = command;
  if (command.database === 'sqlite') return operateSqlite(command.url!, schema, codecs, fn);
  if (command.database === 'mysql') {
    const { createPool } = await loadMysql2();
    const pool = createPool({ uri: command.url, connectionLimit: 10 });
    try {
      const executor = fromMysql2(pool);
      return await operateMysql(executor, schema, codecs, fn).catch((error: unknown) => {
        throw explainMysqlConnectionError(error, schema, executor.target, null);
      });
    } finally {
      await pool.end();
    }
  }
  const { Pool } = await loadPg();
  const pool = new Pool(
    command.url === undefined
      ? { max: 10, connectionTimeoutMillis: 10_000 }
      : { connectionString: command.url, max: 10, connectionTimeoutMillis: 10_000 },
  );
  pool.on('error', () => undefined);
  try {
    const executor = fromPg(pool);
    return await operatePostgres(executor, schema, codecs, fn).catch((error: unknown) => {
      throw explainConnectionError(error, schema, executor.target, null);
    });
  } finally {
    await pool.end();
  }
}

async function run(command: OperatorCommand, storage: WorkflowStorage, out: (line: string) => void): Promise<void> {
  const print = (json: unknown, text: string) => out(command.json ? JSON.stringify(json) : text);
  const id = command.id;
  switch (command.name) {
    case 'list': {
      const rows = (await storage.list(parseListRequest({ ...command.filter, limit: command.limit }))).map(shown);
      print(rows, rows.length === 0 ? 'No instance matches.' : rows.map(listLine).join('\n'));
      return;
    }
    case 'show': {
      const details = await storage.get(id!, { journal: command.journal, readable: true });
      if (!details) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
      print(shown(details), showText(shown(details)));
      return;
    }
    case 'fork': {
      const { instance, created } = await forkInstance(storage, id!, command.fork, {
        now: () => Date.now(),
        traceContext: () => null,
        create: (fork) => storage.fork(fork),
      });
      const from = instance.forkedFrom!;
      print(
        { id: instance.id, created, forkedFrom: from },
        `${created ? 'Forked' : 'Already forked:'} "${from.id}" ${from.step === null ? 'from the top' : `from step "${from.step}"`} into "${instance.id}".`,
      );
      return;
    }
    default: {
      if (id !== undefined) {
        const changed = await actOnOne(command, storage, id);
        print(
          { id, changed },
          changed ? `${verb(command.name)} "${id}".` : `"${id}" was ${verb(command.name).toLowerCase()} already.`,
        );
        return;
      }
      const selection = parseBulkFilter(command.name, command.filter, Date.now(), '--all');
      const result: WorkflowBulkResult = await actOnMatching(
        { list: (query) => storage.list(query), get: (one) => storage.get(one, { readable: true }), now: Date.now },
        selection,
        command.name === 'retry'
          ? oneAtATime((instance) => retryListed(command, storage, instance))
          : inStorePages(
              (instance) => appliesTo(command.name, instance),
              (ids) => storage.changeMany(ids, bulkChange(command)),
            ),
      );
      print(result, `${result.matched} matched; ${verb(command.name).toLowerCase()} ${result.changed}.`);
    }
  }
}

function verb(name: OperatorName): string {
  const verbs: Partial<Record<OperatorName, string>> = {
    pause: 'Paused',
    resume: 'Resumed',
    cancel: 'Cancelled',
    terminate: 'Terminated',
  };
  return verbs[name] ?? 'Retried';
}

/**
 * An action on one id, refused with the reason (unknown, finished...) as the client would; resolves
 * to whether it changed the instance (pausing a paused one, or resuming one that isn't, changes nothing).
 */
async function actOnOne(command: OperatorCommand, storage: WorkflowStorage, id: string): Promise<boolean> {
  const read = async () => {
    const current = await storage.get(id, { journal: true, readable: true });
    if (!current) throw new WorkflowNotFoundError(`No workflow instance has the id "${id}".`);
    return current;
  };
  if (command.name === 'retry') {
    await retryInstance(storage, id, read, Date.now);
    return true;
  }
  if (command.name === 'pause' || command.name === 'resume') {
    const pause = command.name === 'pause';
    const changed = pause
      ? await storage.pause(id, { reason: command.reason ?? null, now: Date.now() })
      : await storage.resume(id, Date.now());
    if (changed) return true;
    const current = await read();
    if (FINISHED_STATUSES.includes(current.status))
      throw new WorkflowInvalidStateError(
        `Instance "${id}" is ${current.status} and can't be ${pause ? 'paused' : 'resumed'}.`,
      );
    return false;
  }
  const terminate = command.name === 'terminate';
  if (await storage.requestCancel(id, parseCancelRequest(command.reason, terminate, Date.now()))) return true;
  throw cancelRefused(await read(), terminate);
}

/** The bulk form of a retry: whether it changed the instance (moved on since it was listed: no). */
async function retryListed(command: OperatorCommand, storage: WorkflowStorage, instance: WorkflowInstance) {
  if (!['failed', 'cancelled', 'compensation_failed'].includes(instance.status)) return false;
  try {
    return await actOnOne(command, storage, instance.id);
  } catch (error) {
    if (error instanceof WorkflowInvalidStateError || error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** Whether a listed instance is one the bulk `name` may change (the store checks again). */
function appliesTo(name: OperatorName, instance: WorkflowInstance): boolean {
  if (name === 'resume') return instance.status === 'paused';
  if (FINISHED_STATUSES.includes(instance.status)) return false;
  return name !== 'pause' || instance.status !== 'paused';
}

/** What a page of the bulk `command` (pause, resume, cancel, terminate) asks of the store, as of now. */
function bulkChange(command: OperatorCommand): WorkflowBulkChange {
  const now = Date.now();
  if (command.name === 'resume') return { kind: 'resume', now };
  if (command.name === 'pause') return { kind: 'pause', request: { reason: command.reason ?? null, now } };
  return { kind: 'cancel', request: parseCancelRequest(command.reason, command.name === 'terminate', now) };
}

/** An instance as the CLI prints it: without the lease token (the workers' secret). */
function shown<T extends WorkflowInstance>(instance: T): T {
  return { ...instance, leaseToken: null };
}

function listLine(instance: WorkflowInstance): string {
  return [
    instance.id,
    `${instance.workflow}@${instance.version}`,
    instance.status,
    new Date(instance.createdAt).toISOString(),
  ].join('\t');
}

function showText(details: Awaited<ReturnType<WorkflowStorage['get']>> & object): string {
  const lines = [
    `id:          ${details.id}`,
    `workflow:    ${details.workflow}@${details.version}`,
    `status:      ${details.status}${details.cancelRequested ? (details.terminateRequested ? ' (terminate requested)' : ' (cancel requested)') : ''}`,
    `created:     ${new Date(details.createdAt).toISOString()}`,
    `updated:     ${new Date(details.updatedAt).toISOString()}`,
    `wakes:       ${details.wakeAt === null ? '-' : new Date(details.wakeAt).toISOString()}`,
    `runs:        ${details.runs}`,
  ];
  if (details.parentId !== null) lines.push(`parent:      ${details.parentId}`);
  if (details.forkedFrom)
    lines.push(
      `forked from: ${details.forkedFrom.id}${details.forkedFrom.step === null ? '' : ` at "${details.forkedFrom.step}"`}`,
    );
  if (details.error) lines.push(`error:       ${details.error.name}: ${details.error.message}`);
  for (const wait of details.waits)
    lines.push(`waits for:   ${wait.name}${wait.key === null ? '' : ` (key ${JSON.stringify(wait.key)})`}`);
  if (details.unreadable)
    lines.push(`unreadable:  ${details.unreadable.fields.join(', ')} (${details.unreadable.reason})`);
  for (const entry of details.journal ?? [])
    lines.push(`  ${entry.name}\t${entry.kind}\t${entry.state}${entry.compensated ? ' (compensated)' : ''}`);
  return lines.join('\n');
}
