import type { SqlExecutor } from '../sql/sql-executor.js';

/** The server's "in a transaction" status bit (SERVER_STATUS_IN_TRANS), sent with every OK packet. */
const IN_TRANSACTION = 0x0001;

/**
 * Whether `connection`'s session is in a transaction, as the server says in the status of a
 * statement that touches nothing (`DO 0`); `undefined` when the reply carries no status.
 */
export async function serverInTransaction(connection: {
  query(sql: string): Promise<[unknown, unknown]>;
}): Promise<boolean | undefined> {
  const [header] = await connection.query('DO 0');
  const status = (header as { serverStatus?: number } | undefined)?.serverStatus;
  return status === undefined ? undefined : (status & IN_TRANSACTION) !== 0;
}

/**
 * The statements of one transaction that `fromMysql2()` opened (a `ctx.transaction()` step's,
 * among others), watched for the server rolling the whole transaction back under them. InnoDB
 * does that for a deadlock (1213), and for a lock-wait timeout (1205) on a server with
 * `innodb_rollback_on_timeout`: the statement fails, and the session is no longer in a
 * transaction. A callback that catches that error and goes on would then send statements that
 * each commit on their own, and the store's write of the step's result would commit alone, with
 * none of the rows it stands for. So when a statement fails, the server is asked whether the
 * session is still in the transaction; once it is not, every later statement is refused (the
 * COMMIT too, so the attempt fails and nothing more commits), with an error whose cause is the
 * one that ended the transaction (a deadlock's is then run again at once, as any deadlock is).
 *
 * The statements go one at a time: mysql2 sends a statement queued on the connection as soon as
 * the one before it answered, so one queued behind the failed statement (`Promise.all`) would reach
 * the server before the question, outside the transaction.
 */
export class ServerRollbackWatch {
  private tail: Promise<unknown> = Promise.resolve();
  /** The error of the statement under which the server rolled the transaction back. */
  private rolledBackBy: Error | undefined;

  /** `inTransaction`: asks the server whether the session is still in the transaction. */
  constructor(private readonly inTransaction: () => Promise<boolean | undefined>) {}

  /**
   * Runs `send` once every statement before it has answered; refused once the server rolled the
   * transaction back, unless it `writesNothing` (a ROLLBACK, a session variable set back).
   */
  run<T>(send: () => T | Promise<T>, writesNothing = false): Promise<T> {
    const result = this.tail.then(async () => {
      if (this.rolledBackBy && !writesNothing) throw refusal(this.rolledBackBy);
      try {
        return await send();
      } catch (error) {
        // Not known to be in the transaction any more (the question failed: the connection is
        // gone, and the transaction with it) counts as rolled back.
        if (!this.rolledBackBy && (await this.inTransaction().catch(() => false)) === false) {
          this.rolledBackBy = error instanceof Error ? error : new Error(String(error));
        }
        throw error;
      }
    });
    this.tail = result.then(noop, noop);
    return result;
  }

  /** `executor`, its statements sent through `run()` (`writesNothing` ones still sent after a rollback). */
  executor(executor: SqlExecutor): SqlExecutor {
    const watched: SqlExecutor = {
      query: (sql, params, options) =>
        this.run(() => executor.query(sql, params, options), options?.writesNothing === true),
      transaction: (fn) => fn(watched),
      handle: executor.handle,
    };
    return watched;
  }
}

function noop(): void {}

function refusal(cause: Error): Error {
  return new Error(
    `The server rolled this transaction back when one of its statements failed (${cause.message}); the connection is no longer in a transaction, ` +
      'so its later statements, which would each commit on their own, are refused, and nothing more of it commits. ' +
      "In a ctx.transaction() callback, let the error propagate rather than catch it and go on: the attempt then fails and runs again (a deadlock at once, otherwise as the step's retry allows).",
    { cause },
  );
}
