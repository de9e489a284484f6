import { databaseError } from './mysql-database-error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';

/** MySQL's ER_SP_DOES_NOT_EXIST: the savepoint named is not there. */
const NO_SUCH_SAVEPOINT = 1305;

const PROBE = 'nest_workflows_probe';

/**
 * Whether `executor`'s statements run in a transaction, asked with a savepoint (two statements,
 * on MySQL and MariaDB alike, through any library's handle): MySQL takes a `SAVEPOINT` outside a
 * transaction without a word, but the savepoint is gone with its own statement's commit, so
 * releasing it fails. Resolves to `null` in a transaction, else to the server's refusal of the
 * release (the cause to report); any other failure rejects.
 */
export async function outsideTransaction(executor: SqlExecutor): Promise<Error | null> {
  await executor.query(`SAVEPOINT ${PROBE}`);
  try {
    await executor.query(`RELEASE SAVEPOINT ${PROBE}`);
    return null;
  } catch (error) {
    if (databaseError(error)?.errno !== NO_SUCH_SAVEPOINT) throw error;
    return error instanceof Error ? error : new Error(String(error));
  }
}
