import { WorkflowError } from '../errors/workflow.error.js';
import { WorkflowStoreStartupError, type WorkflowStoreStartupProblem } from '../errors/workflow-store-startup.error.js';
import type { SqlExecutor, SqlQueryResult } from './sql-executor.js';

/** Node's codes for a host or port where no server could be reached. */
export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** A SQL store's server as startup errors name it. */
export interface StartupServer {
  /** The store's class name. */
  store: string;
  /** The server's kind, as users call it: `PostgreSQL`, `MySQL`. */
  server: string;
  /** Where the executor connects (`SqlExecutor.target`). */
  target: string | undefined;
}

/** What a dialect reads in a driver's error: what failed, and what the user should check. */
export interface StartupDiagnosis {
  problem: WorkflowStoreStartupProblem;
  /** What failed, as a clause (`could not reach the MySQL server`). */
  what: string;
  /** What to check, as sentences. */
  check: string;
}

/** The driver's message, or those of the errors it aggregates (Node's for a `localhost` with two addresses). */
export function driverMessage(error: Error): string {
  return (
    error.message || (error as Error & { errors?: Error[] }).errors?.map((e) => e.message).join('; ') || String(error)
  );
}

/** The driver's code (`ECONNREFUSED`, a SQLSTATE, mysql2's `ER_...`), or of the first error it aggregates. */
export function driverCode(error: Error): string {
  const own = (error as Error & { code?: unknown }).code;
  if (typeof own === 'string') return own;
  const inner = (error as Error & { errors?: Array<{ code?: unknown }> }).errors?.find(
    (e) => typeof e?.code === 'string',
  );
  return typeof inner?.code === 'string' ? inner.code : '';
}

/**
 * The one shape of a startup failure, for every SQL store: `<subject> (<server> at <target>):
 * <what failed>. <what to check> (<server> said: <driver's message>)`. `subject` defaults to
 * `<store> could not start`; the CLI, which starts no store, passes none and leads with the server.
 */
export function startupFailure(
  at: StartupServer,
  diagnosis: StartupDiagnosis,
  cause: unknown,
  said: string | undefined,
  subject: string | null = `${at.store} could not start`,
): WorkflowStoreStartupError {
  const where = `${at.server} at ${at.target ?? 'the server of the pool'}`;
  const lead = subject === null ? `${where}: ` : `${subject} (${where}): `;
  const tail = said === undefined ? '' : ` (${at.server} said: ${said})`;
  return new WorkflowStoreStartupError(
    `${lead}${diagnosis.what}. ${diagnosis.check}${tail}`,
    at.store,
    at.target,
    diagnosis.problem,
    { cause },
  );
}

/**
 * `error` as a `WorkflowStoreStartupError` when `diagnose` recognises it as a misconfigured or
 * unreachable database; otherwise as it is (a `WorkflowError` always stays as it is).
 */
export function explainStartupFailure(
  error: unknown,
  at: StartupServer,
  diagnose: (error: Error) => StartupDiagnosis | undefined,
  subject?: string | null,
): unknown {
  if (!(error instanceof Error) || error instanceof WorkflowError) return error;
  const diagnosis = diagnose(error);
  return diagnosis ? startupFailure(at, diagnosis, error, driverMessage(error), subject) : error;
}

/**
 * Runs `statement`, the store's first at startup, bounded by `timeout` ms (the store option
 * `startupTimeout`): a server that accepts TCP and never answers fails startup with a
 * `WorkflowStoreStartupError` (`no-answer`) instead of hanging it; one that refuses fails as
 * `diagnose` says. The timed-out attempt is left to the pool (its own connect timeout ends it).
 */
export async function firstAnswer(
  executor: SqlExecutor,
  statement: string,
  timeout: number,
  at: StartupServer,
  diagnose: (error: Error) => StartupDiagnosis | undefined,
  noAnswerCheck: string,
): Promise<SqlQueryResult> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          startupFailure(
            at,
            {
              problem: 'no-answer',
              what: `the server did not answer within ${timeout} ms (the store option \`startupTimeout\`)`,
              check:
                `Something accepts connections there but does not answer as ${at.server}, or the server is overloaded. ` +
                noAnswerCheck,
            },
            undefined,
            undefined,
          ),
        ),
      timeout,
    );
  });
  try {
    return await Promise.race([executor.query(statement), expired]);
  } catch (error) {
    throw explainStartupFailure(error, at, diagnose);
  } finally {
    clearTimeout(timer);
  }
}
