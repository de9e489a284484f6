import { findInErrorChain } from '../errors/driver-error-chain.js';
import { quoteIdentifier } from '../sql/schema-name.js';
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

/** The suffix of the streams' LISTEN/NOTIFY channel, after the wake-up channel's name. */
export const STREAMS_CHANNEL_SUFFIX = '_streams';

/** The longest payload NOTIFY takes is 8000 bytes: an id and name beyond this are sent as `''` (any stream). */
const MAX_NOTICE = 7_000;

/** A notification's payload: the instance id and the stream name, or `''` when too long to name them. */
export function streamNotice(id: string, stream: string): string {
  const notice = `${id}\n${stream}`;
  return Buffer.byteLength(notice) > MAX_NOTICE ? '' : notice;
}

/** The streams' statements for a quoted schema (migration 0009). */
function streamStatements(s: string) {
  return {
    /**
     * $1 id, $2 name: the stream's row, created when the instance exists, locked either way (the
     * no-op DO UPDATE takes the row lock at once, as a second statement's FOR UPDATE would after a read).
     */
    lock: `INSERT INTO ${s}.streams AS t (instance_id, name) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM ${s}.instances WHERE id = $1)
ON CONFLICT (instance_id, name) DO UPDATE SET last_seq = t.last_seq
RETURNING last_seq, value_count, bytes, closed`,
    /** $1 id, $2 name, $3 body indexes. */
    bodySeqs: `SELECT body_index, seq FROM ${s}.stream_items WHERE instance_id = $1 AND name = $2 AND body_index = ANY($3::integer[])`,
    /** $1 id, $2 name, $3.. $9 the items' columns as arrays. */
    insert: `INSERT INTO ${s}.stream_items (instance_id, name, seq, kind, value, body_index, step, attempt, created_at)
SELECT $1, $2, u.seq, u.kind, u.value::json, u.body_index, u.step, u.attempt, u.created_at
FROM unnest($3::bigint[], $4::text[], $5::text[], $6::integer[], $7::text[], $8::integer[], $9::bigint[])
  AS u (seq, kind, value, body_index, step, attempt, created_at)`,
    /** $1 id, $2 name, $3 last seq, $4 values, $5 bytes, $6 closed. */
    update: `UPDATE ${s}.streams SET last_seq = $3, value_count = $4, bytes = $5, closed = $6 WHERE instance_id = $1 AND name = $2`,
    /** $1 channel, $2 payload: sent at commit. */
    notify: `SELECT pg_notify($1, $2)`,
    /** $1 id, $2 name. */
    head: `SELECT last_seq, closed FROM ${s}.streams WHERE instance_id = $1 AND name = $2`,
    /** $1 id, $2 name, $3 after, $4 limit. */
    items: `SELECT seq, kind, value::text AS value, step, attempt, created_at FROM ${s}.stream_items
WHERE instance_id = $1 AND name = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
  };
}

/** `appendStream()` and `readStream()` on PostgreSQL, notified on the schema's streams channel. */
export class PostgresStreams implements StreamStatements {
  private readonly sql: ReturnType<typeof streamStatements>;

  constructor(
    schema: string,
    /** The streams' channel. */
    private readonly channel: string,
  ) {
    this.sql = streamStatements(quoteIdentifier(schema));
  }

  async lockStream(tx: SqlExecutor, id: string, stream: string): Promise<StreamHead | null> {
    const { rows } = await tx.query(this.sql.lock, [id, stream]);
    const row = rows[0];
    return row ? toStreamHead(row) : null;
  }

  async bodySeqs(tx: SqlExecutor, id: string, stream: string, indexes: number[]): Promise<Map<number, number>> {
    const { rows } = await tx.query(this.sql.bodySeqs, [id, stream, indexes]);
    return new Map(rows.map((row) => [toNumber(row.body_index), toNumber(row.seq)]));
  }

  async insertItems(tx: SqlExecutor, id: string, stream: string, rows: StreamItemRow[]): Promise<void> {
    await tx.query(this.sql.insert, [
      id,
      stream,
      rows.map((r) => r.seq),
      rows.map((r) => r.kind),
      rows.map((r) => r.value),
      rows.map((r) => r.bodyIndex),
      rows.map((r) => r.step),
      rows.map((r) => r.attempt),
      rows.map((r) => r.createdAt),
    ]);
  }

  async updateHead(tx: SqlExecutor, id: string, stream: string, head: StreamHead): Promise<void> {
    await tx.query(this.sql.update, [id, stream, head.lastSeq, head.values, head.bytes, head.closed]);
  }

  async notify(tx: SqlExecutor, id: string, stream: string): Promise<void> {
    await tx.query(this.sql.notify, [this.channel, streamNotice(id, stream)]);
  }

  missingInstance(error: unknown): boolean {
    // foreign_key_violation: the instance's delete committed between the EXISTS and the insert.
    return findInErrorChain(error, (fields) => (fields.code === '23503' ? true : undefined)) === true;
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
