import { WorkflowError } from '../errors/workflow.error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import {
  driverCode,
  driverMessage,
  explainStartupFailure,
  firstAnswer,
  NETWORK_CODES,
  type StartupDiagnosis,
  type StartupServer,
} from '../sql/startup-failure.js';

const STORE = 'PostgresWorkflowStore';

/** What a `pg` error at startup means, by its code (a SQLSTATE or Node's), for a store on `schema`. */
function diagnose(schema: string): (error: Error) => StartupDiagnosis | undefined {
  return (error) => {
    const code = driverCode(error);
    const sqlState = /^[0-9A-Z]{5}$/.test(code);
    if (NETWORK_CODES.has(code) || (!sqlState && /connect|timeout|terminat/i.test(driverMessage(error)))) {
      return {
        problem: 'unreachable',
        what: 'could not reach the PostgreSQL server',
        check:
          'Check the host and port (the URL or connection string, or PGHOST/PGPORT), that the server is running and accepts TCP ' +
          'connections there, and any firewall in between.',
      };
    }
    if (code === '3D000') {
      return {
        problem: 'unknown-database',
        what: 'the database does not exist',
        check: 'Check the database name (the URL or connection string, or PGDATABASE), or create it.',
      };
    }
    if (code.startsWith('28')) {
      return {
        problem: 'access-denied',
        what: 'the server refused the credentials',
        check: 'Check the user and password (the URL or connection string, or PGUSER/PGPASSWORD) and pg_hba.conf.',
      };
    }
    if (code.startsWith('08') || code === '57P03') {
      return {
        problem: 'refused',
        what: 'the server refused the connection',
        check: 'Check that it is up and accepting connections, and its max_connections.',
      };
    }
    if (code === '42501') {
      return {
        problem: 'not-permitted',
        what: `the role may not create or change the schema "${schema}"`,
        check:
          'Grant it CREATE on the database (or on the schema), or apply the migrations with a privileged role ' +
          '(`npx nest-workflows migrate --postgres <url>`) and set `migrate: false`.',
      };
    }
    return undefined;
  };
}

const server = (target: string | undefined): StartupServer => ({ store: STORE, server: 'PostgreSQL', target });

/**
 * When `error` is one a misconfigured or unreachable database gives, a `WorkflowStoreStartupError`
 * that names the server at `target`, says what failed and what to check, and keeps the driver's
 * message; otherwise `error` as it is. `subject` as `startupFailure()` takes it (`null` for the CLI).
 */
export function explainConnectionError(
  error: unknown,
  schema: string,
  target: string | undefined,
  subject?: string | null,
): unknown {
  return explainStartupFailure(error, server(target), diagnose(schema), subject);
}

/**
 * The store's first statement at startup, bounded by `timeout` ms (`firstAnswer()`).
 *
 * The same statement reads the isolation level the pool's statements run at, and refuses any but
 * READ COMMITTED: the store's statements take a signal topic's lock and then read what committed
 * before it was granted, which a snapshot taken at the statement's start (REPEATABLE READ,
 * SERIALIZABLE) can't see. A signal would then miss a suspension that committed while it waited,
 * and that instance would sleep through it.
 */
export async function checkAnswers(executor: SqlExecutor, timeout: number, schema: string): Promise<void> {
  const { rows } = await firstAnswer(
    executor,
    "SELECT current_setting('transaction_isolation') AS isolation",
    timeout,
    server(executor.target),
    diagnose(schema),
    'Check the host and port (the URL or connection string, or PGHOST/PGPORT), and set `connectionTimeoutMillis` on the Pool ' +
      'so its connection attempts give up too.',
  );
  const isolation = rows[0]?.isolation;
  if (isolation !== 'read committed') {
    throw new WorkflowError(
      `${STORE} could not start: the pool's statements run at ${String(isolation).toUpperCase()} ` +
        '(`default_transaction_isolation`), and the store needs READ COMMITTED: under a snapshot taken when a statement ' +
        'starts, a signal misses an instance that suspended on it while the signal waited for its lock, and the instance ' +
        "sleeps through it. Set `default_transaction_isolation` to 'read committed' for the store's pool " +
        "(`new Pool({ options: '-c default_transaction_isolation=read\\\\ committed' })`) or for its role " +
        "(`ALTER ROLE ... SET default_transaction_isolation = 'read committed'`).",
    );
  }
}
