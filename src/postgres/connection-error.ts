import { WorkflowError } from '../errors/workflow.error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * When `error` is one a misconfigured or unreachable database gives at startup, a `WorkflowError`
 * that says so, keeps the driver's message and says what to check; otherwise `error` as it is.
 */
export function explainConnectionError(error: unknown, schema: string): unknown {
  if (!(error instanceof Error) || error instanceof WorkflowError) return error;
  const code = (error as Error & { code?: unknown }).code;
  const codeText = typeof code === 'string' ? code : '';
  const message =
    error.message || (error as Error & { errors?: Error[] }).errors?.map((e) => e.message).join('; ') || String(error);
  let advice: string | undefined;
  const sqlState = /^[0-9A-Z]{5}$/.test(codeText);
  if (NETWORK_CODES.has(codeText) || (!sqlState && /connect|timeout|terminat/i.test(message))) {
    advice =
      'could not reach the PostgreSQL server. Check the host and port of the pool (PGHOST/PGPORT or the connection ' +
      'string), that the server is running and accepts TCP connections there, and any firewall in between.';
  } else if (codeText === '3D000') {
    advice =
      'the database does not exist. Check the database name of the pool (PGDATABASE or the connection string), or create it.';
  } else if (codeText.startsWith('28')) {
    advice =
      "the server refused the credentials. Check the pool's user and password (PGUSER/PGPASSWORD) and pg_hba.conf.";
  } else if (codeText.startsWith('08') || codeText === '57P03') {
    advice =
      'the server refused the connection. Check that it is up and accepting connections, and its max_connections.';
  } else if (codeText === '42501') {
    advice =
      `the role may not create or change the schema "${schema}". Grant it CREATE on the database (or on the schema), or ` +
      'apply the migrations with a privileged role (`npx nest-workflows migrate`) and set `migrate: false`.';
  }
  if (!advice) return error;
  return new WorkflowError(`PostgresWorkflowStore could not start: ${advice} (PostgreSQL said: ${message})`, {
    cause: error,
  });
}

/**
 * The store's first statement at startup, bounded by `timeout` ms: a server that accepts TCP and
 * never answers fails startup with a `WorkflowError` naming the server, instead of hanging it; one
 * that refuses fails as `explainConnectionError()` says. The timed-out attempt is left to the pool
 * (its `connectionTimeoutMillis`, when set, ends it).
 *
 * The same statement reads the isolation level the pool's statements run at, and refuses any but
 * READ COMMITTED: the store's statements take a signal topic's lock and then read what committed
 * before it was granted, which a snapshot taken at the statement's start (REPEATABLE READ,
 * SERIALIZABLE) can't see. A signal would then miss a suspension that committed while it waited,
 * and that instance would sleep through it.
 */
export async function checkAnswers(executor: SqlExecutor, timeout: number, schema: string): Promise<void> {
  const target = executor.target ?? 'the server of the pool';
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new WorkflowError(
            `PostgresWorkflowStore could not start: PostgreSQL at ${target} did not answer within ${timeout} ms ` +
              '(the store option `startupTimeout`). Check the host and port of the pool (PGHOST/PGPORT or the connection ' +
              'string): something accepts connections there but does not answer as PostgreSQL, or the server is overloaded. ' +
              'Set `connectionTimeoutMillis` on the Pool so its connection attempts give up too.',
          ),
        ),
      timeout,
    );
  });
  let isolation: unknown;
  try {
    const { rows } = await Promise.race([
      executor.query("SELECT current_setting('transaction_isolation') AS isolation"),
      expired,
    ]);
    isolation = rows[0]?.isolation;
  } catch (error) {
    const explained = explainConnectionError(error, schema);
    if (explained instanceof WorkflowError && explained !== error && executor.target) {
      throw new WorkflowError(
        explained.message.replace('could not start:', `could not start (PostgreSQL at ${executor.target}):`),
        { cause: error },
      );
    }
    throw explained;
  } finally {
    clearTimeout(timer);
  }
  if (isolation !== 'read committed') {
    throw new WorkflowError(
      `PostgresWorkflowStore could not start: the pool's statements run at ${String(isolation).toUpperCase()} ` +
        '(`default_transaction_isolation`), and the store needs READ COMMITTED: under a snapshot taken when a statement ' +
        'starts, a signal misses an instance that suspended on it while the signal waited for its lock, and the instance ' +
        "sleeps through it. Set `default_transaction_isolation` to 'read committed' for the store's pool " +
        "(`new Pool({ options: '-c default_transaction_isolation=read\\\\ committed' })`) or for its role " +
        "(`ALTER ROLE ... SET default_transaction_isolation = 'read committed'`).",
    );
  }
}
