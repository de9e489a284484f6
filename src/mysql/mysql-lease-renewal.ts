import { retryOnLockContention } from './mysql-retry.js';
import type { MySqlTables } from './mysql-tables.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toLeaseFlags } from '../sql/workflow-rows.js';
import type { WorkflowLeaseFlags } from '../storage/workflow-store.js';

/** `renew()`'s statements for the store's tables. */
function renewalStatements({ instances }: MySqlTables) {
  return {
    /** lease until, id, token. */
    renew: `UPDATE ${instances} SET lease_until = ? WHERE id = ? AND lease_token = ?`,
    /** id, token: the cancel flags, while the lease is still the token's. */
    flags: `SELECT cancel_requested, terminate_requested, paused FROM ${instances} WHERE id = ? AND lease_token = ?`,
  };
}

/**
 * `renew()` on MySQL: an UPDATE fenced by the token (retried on lock contention), then the cancel
 * flags read while the token still holds (MySQL's UPDATE returns no rows).
 */
export class MySqlLeaseRenewal {
  private readonly sql: ReturnType<typeof renewalStatements>;

  constructor(tables: MySqlTables) {
    this.sql = renewalStatements(tables);
  }

  async renew(
    executor: SqlExecutor,
    id: string,
    token: string,
    leaseUntil: number,
  ): Promise<WorkflowLeaseFlags | null> {
    const { rowCount } = await retryOnLockContention(() => executor.query(this.sql.renew, [leaseUntil, id, token]));
    if (rowCount === 0) return null;
    const { rows } = await executor.query(this.sql.flags, [id, token]);
    return toLeaseFlags(rows[0]);
  }
}
