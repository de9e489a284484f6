import type { SqlExecutor } from '../sql/sql-executor.js';
import {
  driverCode,
  explainStartupFailure,
  firstAnswer,
  NETWORK_CODES,
  type StartupDiagnosis,
  type StartupServer,
} from '../sql/startup-failure.js';

const STORE = 'MySqlWorkflowStore';

/** mysql2's codes for a connection lost or never made (besides Node's network codes). */
const LOST = new Set(['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_NET_READ_INTERRUPTED']);

/** What a mysql2 error at startup means, by its code, for a store whose tables start with `schema`. */
function diagnose(schema: string): (error: Error) => StartupDiagnosis | undefined {
  return (error) => {
    const code = driverCode(error);
    if (NETWORK_CODES.has(code) || LOST.has(code)) {
      return {
        problem: 'unreachable',
        what: 'could not reach the MySQL server',
        check:
          "Check the host and port (the URL, or the pool's `host` and `port`), that the server is running and accepts TCP " +
          'connections there, and any firewall in between.',
      };
    }
    if (code === 'ER_BAD_DB_ERROR') {
      return {
        problem: 'unknown-database',
        what: 'the database does not exist',
        check: "Check the database name (the URL's path, or the pool's `database`), or create it.",
      };
    }
    if (
      code === 'ER_ACCESS_DENIED_ERROR' ||
      code === 'ER_DBACCESS_DENIED_ERROR' ||
      code === 'ER_NOT_SUPPORTED_AUTH_MODE'
    ) {
      return {
        problem: 'access-denied',
        what: 'the server refused the credentials',
        check:
          "Check the user and password (the URL, or the pool's `user` and `password`), and that the user may connect from " +
          'this host and use the database (GRANT).',
      };
    }
    if (code === 'ER_CON_COUNT_ERROR' || code === 'ER_SERVER_SHUTDOWN' || code === 'ER_HOST_IS_BLOCKED') {
      return {
        problem: 'refused',
        what: 'the server refused the connection',
        check: 'Check that it is up and accepting connections, and its max_connections.',
      };
    }
    if (code === 'ER_TABLEACCESS_DENIED_ERROR' || code === 'ER_SPECIFIC_ACCESS_DENIED_ERROR') {
      return {
        problem: 'not-permitted',
        what: `the user may not create or change the tables "${schema}_*"`,
        check:
          'Grant it CREATE, ALTER, INDEX and DROP on the database, or apply the migrations with a privileged user ' +
          '(`npx nest-workflows migrate --mysql <url>`) and set `migrate: false`.',
      };
    }
    return undefined;
  };
}

const server = (target: string | undefined): StartupServer => ({ store: STORE, server: 'MySQL', target });

/**
 * When `error` is one a misconfigured or unreachable database gives, a `WorkflowStoreStartupError`
 * that names the server at `target`, says what failed and what to check, and keeps the driver's
 * message; otherwise `error` as it is. `subject` as `startupFailure()` takes it (`null` for the CLI).
 */
export function explainMysqlConnectionError(
  error: unknown,
  schema: string,
  target: string | undefined,
  subject?: string | null,
): unknown {
  return explainStartupFailure(error, server(target), diagnose(schema), subject);
}

/** The store's first statement at startup, bounded by `timeout` ms (`firstAnswer()`). */
export async function checkMysqlAnswers(executor: SqlExecutor, timeout: number, schema: string): Promise<void> {
  await firstAnswer(
    executor,
    'SELECT 1',
    timeout,
    server(executor.target),
    diagnose(schema),
    "Check the host and port (the URL, or the pool's `host` and `port`), and set `connectTimeout` on the pool so its " +
      'connection attempts give up too.',
  );
}
