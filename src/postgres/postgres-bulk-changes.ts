import { CANCELS_PREFIX } from './postgres-listener.js';
import type { SqlBulkChanges } from '../sql/bulk-changes.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { CANCELLABLE, UNFINISHED } from '../sql/status-lists.js';
import type { WorkflowBulkChange } from '../storage/workflow-store-bulk.js';

/** The most bytes of one notification's payload: PostgreSQL refuses 8,000 and more. */
const PAYLOAD_BYTES = 7_900;

/** `changeMany()`'s statements for a quoted schema: each locks the page's rows in id order, then updates those the change applies to. */
function bulkStatements(s: string) {
  // In id order, so two bulk actions over the same instances never wait for each other in a cycle.
  const update = (set: string, condition: string, now: string) => `WITH locked AS (
  SELECT id FROM ${s}.instances WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
)
UPDATE ${s}.instances i SET ${set} FROM locked l WHERE i.id = l.id AND ${condition}
RETURNING i.id, i.lease_token IS NOT NULL AS leased, (i.lease_token IS NULL AND i.wake_at <= ${now}) AS due`;
  // As requestCancel(): a paused instance is cancelled as it stands, and is due now.
  const cancel = (flags: string) =>
    `${flags}, cancel_reason = $2, paused = false, pause_reason = NULL, ` +
    `wake_at = CASE WHEN i.wake_at IS NOT NULL AND i.wake_at <= $3 THEN i.wake_at ELSE $3 END, updated_at = $3`;
  return {
    /** $1 ids, $2 reason, $3 now. */
    cancel: update(cancel('cancel_requested = true'), `i.status IN ${CANCELLABLE} AND NOT i.cancel_requested`, '$3'),
    /** $1 ids, $2 reason, $3 now. */
    terminate: update(
      cancel('cancel_requested = true, terminate_requested = true'),
      `i.status IN ${UNFINISHED} AND NOT i.terminate_requested`,
      '$3',
    ),
    /** $1 ids, $2 reason, $3 now. */
    pause: update(
      'paused = true, pause_reason = $2, updated_at = $3',
      `i.status IN ${UNFINISHED} AND NOT i.paused`,
      '$3',
    ),
    /** $1 ids, $2 now. */
    resume: update(
      'paused = false, pause_reason = NULL, updated_at = $2',
      `i.status IN ${UNFINISHED} AND i.paused`,
      '$2',
    ),
    /** $1 channel, $2 payloads. A count, not pg_notify()'s void: an ORM's raw query (Prisma's) can't read a void column. */
    notify: `SELECT count(*)::int AS notified FROM unnest($2::text[]) AS p CROSS JOIN LATERAL pg_notify($1, p) AS n`,
  };
}

/**
 * `changeMany()` on PostgreSQL: one UPDATE for the page, then its notices in the same transaction
 * (sent at the commit): the leased instances it cancelled, terminated or paused named in as few
 * `cancels:[ids]` payloads as fit (one, unless the page holds hundreds of leases), so each holder
 * renews at once as for a single `cancel:<id>`; or, when none was leased, one `''` if something
 * became due (a cancel makes a waiting instance due; a resume one whose wake-up passed).
 */
export class PostgresBulkChanges implements SqlBulkChanges {
  private readonly sql: ReturnType<typeof bulkStatements>;

  constructor(
    schema: string,
    /** The wake-up channel. */
    private readonly channel: string,
  ) {
    this.sql = bulkStatements(quoteIdentifier(schema));
  }

  changeAlone(executor: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    return executor.transaction((tx) => this.change(tx, ids, change));
  }

  async change(tx: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.update(tx, ids, change);
    const payloads = noticesOf(change, rows);
    if (payloads.length > 0) await tx.query(this.sql.notify, [this.channel, payloads]);
    return rows.map((row) => String(row.id));
  }

  private update(tx: SqlExecutor, ids: readonly string[], change: WorkflowBulkChange) {
    if (change.kind === 'resume') return tx.query(this.sql.resume, [ids, change.now]);
    const sql =
      change.kind === 'pause' ? this.sql.pause : change.request.terminate ? this.sql.terminate : this.sql.cancel;
    return tx.query(sql, [ids, change.request.reason, change.request.now]);
  }
}

/** The payloads to notify for the rows a page changed (see `PostgresBulkChanges`). */
function noticesOf(change: WorkflowBulkChange, rows: Array<Record<string, unknown>>): string[] {
  if (change.kind !== 'resume') {
    const leased = rows.filter((row) => row.leased === true).map((row) => String(row.id));
    if (leased.length > 0) return namedPayloads(leased);
  }
  // A cancel makes every instance it changed due; a resume, those whose wake-up passed meanwhile.
  if (change.kind === 'cancel' && rows.length > 0) return [''];
  if (change.kind === 'resume' && rows.some((row) => row.due === true)) return [''];
  return [];
}

/** `ids` as `cancels:["a","b"]` payloads, each under `PAYLOAD_BYTES`. */
function namedPayloads(ids: readonly string[]): string[] {
  const payloads: string[] = [];
  let current: string[] = [];
  let bytes = CANCELS_PREFIX.length + 2;
  for (const id of ids) {
    const size = Buffer.byteLength(JSON.stringify(id)) + 1;
    if (current.length > 0 && bytes + size > PAYLOAD_BYTES) {
      payloads.push(CANCELS_PREFIX + JSON.stringify(current));
      current = [];
      bytes = CANCELS_PREFIX.length + 2;
    }
    current.push(id);
    bytes += size;
  }
  if (current.length > 0) payloads.push(CANCELS_PREFIX + JSON.stringify(current));
  return payloads;
}
