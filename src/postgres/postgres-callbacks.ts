import { findInErrorChain } from '../errors/driver-error-chain.js';
import { callbackPayload, refusedSettle, toCallback } from '../sql/callback-rows.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';

/** The callbacks' statements for a quoted schema (migration 0013). */
function callbackStatements(s: string) {
  const columns = 'instance_id, name, state, payload::text AS payload, expires_at, created_at, settled_at';
  return {
    /** $1 id, $2 name, $3 hash, $4 expires at, $5 now: stored while the instance exists; an open one gets the new token. */
    create: `INSERT INTO ${s}.callbacks AS c (instance_id, name, token_hash, expires_at, created_at)
SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM ${s}.instances WHERE id = $1)
ON CONFLICT (instance_id, name) DO UPDATE SET token_hash = excluded.token_hash, expires_at = excluded.expires_at
WHERE c.state = 'open'`,
    /** $1 id, $2 name. */
    exists: `SELECT 1 AS found FROM ${s}.callbacks WHERE instance_id = $1 AND name = $2`,
    get: `SELECT ${columns} FROM ${s}.callbacks WHERE instance_id = $1 AND name = $2`,
    /** $1 hash, $2 state, $3 payload, $4 now. */
    settle: `UPDATE ${s}.callbacks SET state = $2, payload = $3::json, settled_at = $4
WHERE token_hash = $1 AND state = 'open' AND (expires_at IS NULL OR expires_at > $4)
RETURNING instance_id, name`,
    /** $1 hash. */
    byHash: `SELECT state, expires_at FROM ${s}.callbacks WHERE token_hash = $1`,
    /** $1 id, $2 name, $3 now. */
    expire: `UPDATE ${s}.callbacks SET state = 'expired', settled_at = $3 WHERE instance_id = $1 AND name = $2 AND state = 'open'`,
  };
}

/** The callbacks of `PostgresWorkflowStore`: each change one conditional statement. */
export class PostgresCallbacks {
  private readonly sql: ReturnType<typeof callbackStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
  ) {
    this.sql = callbackStatements(quoteIdentifier(schema));
  }

  async create(callback: NewWorkflowCallback): Promise<boolean> {
    const { id, name, tokenHash, expiresAt, now } = callback;
    try {
      const { rowCount } = await this.executor.query(this.sql.create, [id, name, tokenHash, expiresAt, now]);
      if (rowCount > 0) return true;
    } catch (error) {
      // foreign_key_violation: the instance's delete committed between the EXISTS and the insert.
      if (findInErrorChain(error, (fields) => (fields.code === '23503' ? true : undefined))) return false;
      throw error;
    }
    // Nothing changed: a settled callback kept as it is, or no instance.
    return (await this.executor.query(this.sql.exists, [id, name])).rows.length > 0;
  }

  async get(id: string, name: string): Promise<WorkflowCallbackRecord | null> {
    const row = (await this.executor.query(this.sql.get, [id, name])).rows[0];
    return row ? toCallback(row) : null;
  }

  async settle(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult> {
    const payload = callbackPayload(settle.payload);
    const { rows } = await this.executor.query(this.sql.settle, [settle.tokenHash, settle.state, payload, settle.now]);
    const row = rows[0];
    if (row) return { outcome: 'settled', id: String(row.instance_id), name: String(row.name) };
    return refusedSettle((await this.executor.query(this.sql.byHash, [settle.tokenHash])).rows[0], settle.now);
  }

  async expire(id: string, name: string, now: number): Promise<boolean> {
    return (await this.executor.query(this.sql.expire, [id, name, now])).rowCount > 0;
  }
}
