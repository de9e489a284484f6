import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toLeaseFlags } from '../sql/workflow-rows.js';
import type { WorkflowLeaseFlags } from '../storage/workflow-store.js';

/** `renew()`'s statement for a quoted schema. */
function renewalStatements(s: string) {
  return {
    /** $1 id, $2 token, $3 lease until. */
    renew: `UPDATE ${s}.instances SET lease_until = $3 WHERE id = $1 AND lease_token = $2
RETURNING cancel_requested, terminate_requested, paused`,
  };
}

/** `renew()` on PostgreSQL: one UPDATE, fenced by the token, that returns the cancel flags. */
export class PostgresLeaseRenewal {
  private readonly sql: ReturnType<typeof renewalStatements>;

  constructor(schema: string) {
    this.sql = renewalStatements(quoteIdentifier(schema));
  }

  async renew(
    executor: SqlExecutor,
    id: string,
    token: string,
    leaseUntil: number,
  ): Promise<WorkflowLeaseFlags | null> {
    const { rows } = await executor.query(this.sql.renew, [id, token, leaseUntil]);
    return toLeaseFlags(rows[0]);
  }
}
