import { MYSQL_DIALECT } from './mysql-dialect.js';
import { databaseError } from './mysql-database-error.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import {
  toStreamHead,
  toStreamRecord,
  toStreamTail,
  type StreamHead,
  type StreamItemRow,
  type StreamStatements,
} from '../sql/stream-appends.js';
import { toNumber } from '../sql/workflow-rows.js';
import type { WorkflowStreamQuery, WorkflowStreamRecord } from '../storage/workflow-store-streams.js';

/** ER_NO_REFERENCED_ROW_2: the foreign key found no instance (unknown, or deleted meanwhile). */
const NO_REFERENCED_ROW = 1452;

/** The streams' statements for a schema (migration 0007). */
function streamStatements(schema: string) {
  const streams = MYSQL_DIALECT.table(schema, 'streams');
  const items = MYSQL_DIALECT.table(schema, 'stream_items');
  return {
    /** id, name: creates the row (the foreign key refuses an unknown instance) or locks it exclusively. */
    upsert: `INSERT INTO ${streams} (instance_id, name) VALUES (?, ?) ON DUPLICATE KEY UPDATE last_seq = last_seq`,
    /** id, name: the row, locked by the upsert already. */
    locked: `SELECT last_seq, value_count, bytes, closed FROM ${streams} WHERE instance_id = ? AND name = ? FOR UPDATE`,
    bodySeqs: (n: number) =>
      `SELECT body_index, seq FROM ${items} WHERE instance_id = ? AND name = ? AND body_index IN (${Array.from({ length: n }, () => '?').join(', ')})`,
    insert: (n: number) =>
      `INSERT INTO ${items} (instance_id, name, seq, kind, value, body_index, step, attempt, created_at) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    /** last seq, values, bytes, closed, id, name. */
    update: `UPDATE ${streams} SET last_seq = ?, value_count = ?, bytes = ?, closed = ? WHERE instance_id = ? AND name = ?`,
    head: `SELECT last_seq, closed FROM ${streams} WHERE instance_id = ? AND name = ?`,
    /** id, name, after, limit. */
    items: `SELECT seq, kind, value, step, attempt, created_at FROM ${items} WHERE instance_id = ? AND name = ? AND seq > ? ORDER BY seq LIMIT ?`,
  };
}

/**
 * `appendStream()` and `readStream()` on MySQL and MariaDB. No notifications: readers poll
 * (`client.readStream()` backs off between empty reads).
 */
export class MySqlStreams implements StreamStatements {
  private readonly sql: ReturnType<typeof streamStatements>;

  constructor(schema: string) {
    this.sql = streamStatements(schema);
  }

  async lockStream(tx: SqlExecutor, id: string, stream: string): Promise<StreamHead | null> {
    await tx.query(this.sql.upsert, [id, stream]);
    const { rows } = await tx.query(this.sql.locked, [id, stream]);
    const row = rows[0];
    return row ? toStreamHead(row) : null;
  }

  async bodySeqs(tx: SqlExecutor, id: string, stream: string, indexes: number[]): Promise<Map<number, number>> {
    const { rows } = await tx.query(this.sql.bodySeqs(indexes.length), [id, stream, ...indexes]);
    return new Map(rows.map((row) => [toNumber(row.body_index), toNumber(row.seq)]));
  }

  async insertItems(tx: SqlExecutor, id: string, stream: string, rows: StreamItemRow[]): Promise<void> {
    const params = rows.flatMap((r) => [
      id,
      stream,
      r.seq,
      r.kind,
      r.value,
      r.bodyIndex,
      r.step,
      r.attempt,
      r.createdAt,
    ]);
    await tx.query(this.sql.insert(rows.length), params);
  }

  async updateHead(tx: SqlExecutor, id: string, stream: string, head: StreamHead): Promise<void> {
    await tx.query(this.sql.update, [head.lastSeq, head.values, head.bytes, head.closed ? 1 : 0, id, stream]);
  }

  missingInstance(error: unknown): boolean {
    return databaseError(error)?.errno === NO_REFERENCED_ROW;
  }

  async readHead(
    executor: SqlExecutor,
    id: string,
    stream: string,
  ): Promise<{ lastSeq: number; closed: boolean } | null> {
    const { rows } = await executor.query(this.sql.head, [id, stream]);
    const row = rows[0];
    return row ? toStreamTail(row) : null;
  }

  async readItems(executor: SqlExecutor, query: WorkflowStreamQuery): Promise<WorkflowStreamRecord[]> {
    const { rows } = await executor.query(this.sql.items, [query.id, query.stream, query.after, query.limit]);
    return rows.map(toStreamRecord);
  }
}
