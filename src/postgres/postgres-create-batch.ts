import { instanceColumns, notify } from './postgres-statements.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { insertedInstance, newInstanceRow, type NewInstanceRow } from '../sql/instance-params.js';
import { toBoolean, toInstance, toNumber } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import { answerCreates, type CreateResult } from '../sql/create-batch.js';

type Created = CreateResult;

/** A create with its row made (payloads as JSON text) before it joins a batch: one JSON can't carry fails alone. */
interface PendingCreate {
  init: NewWorkflowInstance;
  row: NewInstanceRow;
}

/**
 * `create()` calls made together (an application starting many instances at once) go to the
 * database as one insert-or-ignore statement per batch (see `StatementBatcher`). Each caller still
 * gets its own result, with the contract's rules: of several creates of one id, one creates and the
 * others get the stored instance.
 */
export class PostgresCreateBatch {
  private readonly batcher = new StatementBatcher<PendingCreate, Created>({
    send: (batch) => answerCreates(batch, (firsts) => this.insert(firsts)),
    single: ({ init, row }) => this.single(init, row),
  });
  private readonly sql: string;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
    private readonly channel: string,
    /** Reads an instance whose insert lost to a create that committed after the statement's snapshot. */
    private readonly reread: (id: string) => Promise<WorkflowInstance | null>,
    /** A batch of one goes as the plain single-instance statement: it is cheaper for the server. */
    private readonly single: (init: NewWorkflowInstance, row: NewInstanceRow) => Promise<Created>,
  ) {
    const s = quoteIdentifier(schema);
    // A new row is what was sent plus its signal cursor (`insertedInstance()`): only those two
    // columns come back for it, the others as NULLs (the existing rows' branch gives the types).
    const insertedColumns = instanceColumns('n')
      .split(', ')
      .map((column) =>
        /^n\.(id|signal_cursor)$/.test(column) ? column : `NULL AS ${column.split(' ').pop()!.replace(/^n\./, '')}`,
      )
      .join(', ');
    this.sql = `WITH input AS (
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
    (SELECT coalesce(max(id), 0) FROM ${s}.signals), now, now,
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
WHERE x.id NOT IN (SELECT id FROM inserted)`;
  }

  create(init: NewWorkflowInstance): Promise<Created> {
    // Made here, so an input no store keeps (a NUL, a lone surrogate) fails this call alone.
    return this.batcher.add({ init, row: newInstanceRow(init) });
  }

  /** One insert-or-ignore of the batch's ids; an id neither inserted nor found is read again. */
  private async insert(firsts: PendingCreate[]): Promise<Map<string, Created>> {
    const rows = new Map(firsts.map(({ init, row }) => [init.id, row]));
    const { rows: result } = await this.executor.query(this.sql, [JSON.stringify([...rows.values()]), this.channel]);
    const found = new Map<string, Created>();
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
        const instance = await this.reread(id);
        if (!instance)
          throw new Error(`PostgresWorkflowStore: instance ${JSON.stringify(id)} was neither created nor found.`);
        found.set(id, { instance, created: false });
      }),
    );
    return found;
  }
}
