import { instanceColumns, notify, notifyDue } from './postgres-sql-fragments.js';
import { POSTGRES_INPUT } from './key-limits.js';
import { PostgresDebounces } from './postgres-debounces.js';
import type { PostgresReads } from './postgres-reads.js';
import { answerCreates, type CreateResult } from '../sql/create-batch.js';
import {
  insertedInstance,
  newInstanceParams,
  newInstanceRow,
  newInstanceRowParams,
  type NewInstanceRow,
} from '../sql/instance-params.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import { toBoolean, toInstance, toNumber } from '../sql/workflow-rows.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

/** `create()`'s statements for a quoted schema. */
function createStatements(s: string) {
  // A new row is what was sent plus its signal cursor (`insertedInstance()`): only those two
  // columns come back for it, the others as NULLs (the existing rows' branch gives the types).
  const insertedColumns = instanceColumns('n')
    .split(', ')
    .map((column) =>
      /^n\.(id|signal_cursor)$/.test(column) ? column : `NULL AS ${column.split(' ').pop()!.replace(/^n\./, '')}`,
    )
    .join(', ');
  return {
    /**
     * $1 id, $2 workflow, $3 version, $4 input, $5 parent id, $6 parent close, $7 concurrency key,
     * $8 rate-limit key, $9 priority, $10 schedule id, $11 scheduled at, $12 deadline, $13 wake at,
     * $14 now, $15-$17 the lease it starts with (token, owner, until) or NULLs, $18 trace context,
     * $19 run timeout, $20 channel (`newInstanceParams()` and the channel). The new row
     * (`created`), or the existing one, or no row when a concurrent create committed after this
     * statement's snapshot (read it again).
     */
    create: `WITH inserted AS (
  INSERT INTO ${s}.instances (id, workflow, version, status, input, parent_id, parent_close, concurrency_key,
    rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, signal_cursor, created_at, updated_at,
    runs, lease_token, lease_owner, lease_until, trace_context, run_timeout)
  VALUES ($1, $2, $3, CASE WHEN $15::text IS NULL THEN 'pending' ELSE 'running' END, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
    ${s}.last_signal_drawn(), $14, $14,
    CASE WHEN $15::text IS NULL THEN 0 ELSE 1 END, $15, $16, $17, $18::json, $19)
  ON CONFLICT (id) DO NOTHING
  RETURNING ${instanceColumns()}
)
SELECT true AS created, n.*, CASE WHEN n.wake_at <= $14 AND n.lease_token IS NULL THEN ${notifyDue('$20', 'n.id')} END AS notified FROM inserted n
UNION ALL
SELECT false, ${instanceColumns('e')}, NULL FROM ${s}.instances e WHERE e.id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`,

    /**
     * $1 the creates (a JSON array of `newInstanceRow()`s, one per id), $2 channel: the new rows
     * (`created`, with only their id and signal cursor) and the existing ones.
     */
    createBatch: `WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS r(id text, workflow text, version int, input text, parent_id text,
    parent_close text, concurrency_key text, rate_limit_key text, priority int, schedule_id text, scheduled_at bigint,
    deadline bigint, wake_at bigint, now bigint, lease_token text, lease_owner text, lease_until bigint,
    trace_context text, run_timeout bigint)
), inserted AS (
  INSERT INTO ${s}.instances (id, workflow, version, status, input, parent_id, parent_close, concurrency_key,
    rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, signal_cursor, created_at, updated_at,
    runs, lease_token, lease_owner, lease_until, trace_context, run_timeout)
  SELECT id, workflow, version, CASE WHEN lease_token IS NULL THEN 'pending' ELSE 'running' END, input::json, parent_id,
    parent_close, concurrency_key, rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at,
    ${s}.last_signal_drawn(), now, now,
    CASE WHEN lease_token IS NULL THEN 0 ELSE 1 END, lease_token, lease_owner, lease_until, trace_context::json, run_timeout
  -- In id order, as every batch of every process inserts: two batches with ids in common wait for
  -- each other at the first shared id instead of each holding one the other needs (a deadlock).
  FROM input ORDER BY id COLLATE "C"
  ON CONFLICT (id) DO NOTHING
  RETURNING id, signal_cursor, wake_at, created_at, lease_token
), woke AS (
  SELECT ${notify('$2')} AS notified WHERE EXISTS (SELECT 1 FROM inserted WHERE wake_at <= created_at AND lease_token IS NULL)
)
SELECT true AS created, ${insertedColumns}, (SELECT count(*) FROM woke) AS notified FROM inserted n
UNION ALL
SELECT false, ${instanceColumns('e')}, NULL
-- Each id not inserted looked up by its key (a lateral subquery is run per row), never a join that
-- a plan made while the table was small would run over a scan of all of it.
FROM input x CROSS JOIN LATERAL (SELECT * FROM ${s}.instances i WHERE i.id = x.id OFFSET 0) e
WHERE x.id NOT IN (SELECT id FROM inserted)`,
  };
}

/** A create with its row made (payloads as JSON text) before it joins a batch: one JSON can't carry fails alone. */
interface PendingCreate {
  init: NewWorkflowInstance;
  row: NewInstanceRow;
}

/**
 * `create()` on PostgreSQL: insert-or-ignore on the primary key, returning the new row or the
 * existing one, and naming a new instance due now on the wake-up channel. Calls made together (an
 * application starting many instances at once) go to the database as one statement per batch
 * (see `StatementBatcher`); a batch of one as the single-instance statement, which is cheaper for
 * the server. Each caller still gets its own result, with the contract's rules: of several creates
 * of one id, one creates and the others get the stored instance.
 */
export class PostgresCreates {
  private readonly batcher = new StatementBatcher<PendingCreate, CreateResult>({
    send: (batch) => answerCreates(batch, (firsts) => this.insert(firsts)),
    single: ({ init, row }) => this.createWith(this.executor, init, newInstanceRowParams(row)),
  });
  private readonly sql: ReturnType<typeof createStatements>;
  private readonly debounces: PostgresDebounces;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
    /** The wake-up channel a new instance due now is notified on. */
    private readonly channel: string,
    /** Reads an instance whose insert lost to a create that committed after the statement's snapshot. */
    private readonly reads: PostgresReads,
  ) {
    this.sql = createStatements(quoteIdentifier(schema));
    this.debounces = new PostgresDebounces(schema, (executor, init) => this.createWith(executor, init));
  }

  create(init: NewWorkflowInstance): Promise<CreateResult> {
    // A debounced create is a transaction of its own, never part of a batch.
    if (init.debounce) return this.debounces.create(this.executor, init);
    // Made here, so an input no store keeps (a NUL, a lone surrogate) fails this call alone.
    return this.batcher.add({ init, row: newInstanceRow(init) });
  }

  /** One create in one statement on `executor` (the pool, or the application's transaction). */
  async createWith(
    executor: SqlExecutor,
    init: NewWorkflowInstance,
    params = newInstanceParams(init),
  ): Promise<CreateResult> {
    POSTGRES_INPUT.newInstance(init);
    const { rows } = await executor.query(this.sql.create, [...params, this.channel]);
    if (rows[0]) return { instance: toInstance(rows[0]), created: toBoolean(rows[0].created) };
    // A concurrent create of the same id committed after this statement's snapshot: read it now.
    const again = await this.reads.instance(executor, init.id);
    if (!again)
      throw new Error(`PostgresWorkflowStore: instance ${JSON.stringify(init.id)} was neither created nor found.`);
    return { instance: again, created: false };
  }

  /** One create in the application's transaction, on its executor. */
  createInTransaction(executor: SqlExecutor, init: NewWorkflowInstance): Promise<CreateResult> {
    if (init.debounce) return this.debounces.create(executor, init);
    return this.createWith(executor, init);
  }

  /** One insert-or-ignore of the batch's ids; an id neither inserted nor found is read again. */
  private async insert(firsts: PendingCreate[]): Promise<Map<string, CreateResult>> {
    const rows = new Map(firsts.map(({ init, row }) => [init.id, row]));
    const { rows: result } = await this.executor.query(this.sql.createBatch, [
      JSON.stringify([...rows.values()]),
      this.channel,
    ]);
    const found = new Map<string, CreateResult>();
    for (const row of result) {
      const id = String(row.id);
      const created = toBoolean(row.created);
      found.set(id, {
        instance: created ? insertedInstance(rows.get(id)!, toNumber(row.signal_cursor)) : toInstance(row),
        created,
      });
    }
    // An id in neither branch: a concurrent create of it committed after this statement's snapshot.
    const missing = [...rows.keys()].filter((id) => !found.has(id));
    await Promise.all(
      missing.map(async (id) => {
        const instance = await this.reads.instance(this.executor, id);
        if (!instance)
          throw new Error(`PostgresWorkflowStore: instance ${JSON.stringify(id)} was neither created nor found.`);
        found.set(id, { instance, created: false });
      }),
    );
    return found;
  }
}
