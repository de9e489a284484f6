import { WorkflowError } from './workflow.error.js';

/**
 * What kept a SQL store from starting (or `nest-workflows` from connecting): `unreachable` (nothing
 * answers at that host and port), `no-answer` (something accepts connections there and never
 * answers), `unknown-database`, `access-denied` (the login was refused), `refused` (the server
 * turned the connection away: starting up, too many connections) or `not-permitted` (the login may
 * not create or change the store's tables).
 */
export type WorkflowStoreStartupProblem =
  'unreachable' | 'no-answer' | 'unknown-database' | 'access-denied' | 'refused' | 'not-permitted';

/**
 * A SQL store could not start, or the CLI could not reach its database: the message names the
 * store, the server (`MySQL at 127.0.0.1:3306 database app`, never a password), what failed and
 * what to check, then what the driver said (also the `cause`). The same fault reads the same on
 * every store; startup tries again as `retryAttempts` says before it gives up with this error.
 */
export class WorkflowStoreStartupError extends WorkflowError {
  constructor(
    message: string,
    /** The store's class name (`PostgresWorkflowStore`, `MySqlWorkflowStore`). */
    readonly store: string,
    /** Where it connects (`host:port database name`), when the executor says. */
    readonly target: string | undefined,
    readonly problem: WorkflowStoreStartupProblem,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
