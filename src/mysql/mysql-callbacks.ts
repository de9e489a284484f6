import { MYSQL_DIALECT } from './mysql-dialect.js';
import { databaseError } from './mysql-database-error.js';
import { CALLBACK_COLUMNS, callbackPayload, refusedSettle, toCallback } from '../sql/callback-rows.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import type {
  NewWorkflowCallback,
  WorkflowCallbackRecord,
  WorkflowCallbackSettle,
  WorkflowCallbackSettleResult,
} from '../storage/workflow-store-callbacks.js';

/** ER_NO_REFERENCED_ROW_2: the foreign key found no instance. */
const NO_REFERENCED_ROW = 1452;

/** The callbacks' statements for a schema (migration 0009). */
function callbackStatements(schema: string) {
  const t = MYSQL_DIALECT.table(schema, 'callbacks');
  return {
    /** id, name, hash, expires at, now. An open one gets the new token; a settled one keeps all it has. */
    create: `INSERT INTO ${t} (instance_id, name, token_hash, expires_at, created_at) VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE token_hash = IF(state = 'open', VALUES(token_hash), token_hash),
  expires_at = IF(state = 'open', VALUES(expires_at), expires_at)`,
    get: `SELECT ${CALLBACK_COLUMNS} FROM ${t} WHERE instance_id = ? AND name = ?`,
    /** state, payload, now, hash, now. */
    settle: `UPDATE ${t} SET state = ?, payload = ?, settled_at = ?
WHERE token_hash = ? AND state = 'open' AND (expires_at IS NULL OR expires_at > ?)`,
    byHash: `SELECT instance_id, name, state, expires_at, settled_at FROM ${t} WHERE token_hash = ?`,
    /** now, id, name. */
    expire: `UPDATE ${t} SET state = 'expired', settled_at = ? WHERE instance_id = ? AND name = ? AND state = 'open'`,
  };
}

/** The callbacks of `MySqlWorkflowStore`: each change one conditional statement. */
export class MySqlCallbacks {
  private readonly sql: ReturnType<typeof callbackStatements>;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
  ) {
    this.sql = callbackStatements(schema);
  }

  async create(callback: NewWorkflowCallback): Promise<boolean> {
    const { id, name, tokenHash, expiresAt, now } = callback;
    try {
      await this.executor.query(this.sql.create, [id, name, tokenHash, expiresAt, now]);
      return true;
    } catch (error) {
      if (databaseError(error)?.errno === NO_REFERENCED_ROW) return false;
      throw error;
    }
  }

  async get(id: string, name: string): Promise<WorkflowCallbackRecord | null> {
    const row = (await this.executor.query(this.sql.get, [id, name])).rows[0];
    return row ? toCallback(row) : null;
  }

  async settle(settle: WorkflowCallbackSettle): Promise<WorkflowCallbackSettleResult> {
    const payload = callbackPayload(settle.payload);
    const { rowCount } = await this.executor.query(this.sql.settle, [
      settle.state,
      payload,
      settle.now,
      settle.tokenHash,
      settle.now,
    ]);
    const row = (await this.executor.query(this.sql.byHash, [settle.tokenHash])).rows[0];
    // The update changed the row: it is this settle's (a token settles once, so no later one can have).
    if (rowCount > 0 && row) return { outcome: 'settled', id: String(row.instance_id), name: String(row.name) };
    return refusedSettle(row, settle.now);
  }

  async expire(id: string, name: string, now: number): Promise<boolean> {
    return (await this.executor.query(this.sql.expire, [now, id, name])).rowCount > 0;
  }
}
