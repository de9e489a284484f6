import { instanceColumns, notify } from './postgres-statements.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { toBoolean, toInstance, toJson } from '../sql/workflow-rows.js';
import type { WorkflowInstance } from '../storage/workflow-instance.js';
import type { NewWorkflowInstance } from '../storage/workflow-store.js';

type Created = { instance: WorkflowInstance; created: boolean };

interface Waiting {
  init: NewWorkflowInstance;
  resolve(result: Created): void;
  reject(error: unknown): void;
}

/** The most creates one statement carries. */
const BATCH = 500;

/**
 * `create()` calls made together (an application starting many instances at once) go to the
 * database as one insert-or-ignore statement per batch instead of one each: a batch leaves as soon
 * as the one before it returned, so a lone create waits for nothing, and under load the commits per
 * instance fall towards zero. Each caller still gets its own result, with the contract's rules: of
 * several creates of one id, one creates and the others get the stored instance.
 */
export class PostgresCreateBatch {
  private readonly queue: Waiting[] = [];
  private running = false;
  private readonly sql: string;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
    private readonly channel: string,
    /** Reads an instance whose insert lost to a create that committed after the statement's snapshot. */
    private readonly reread: (id: string) => Promise<WorkflowInstance | null>,
  ) {
    const s = quoteIdentifier(schema);
    this.sql = `WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS r(ord int, id text, workflow text, version int, input text, parent_id text,
    parent_close text, concurrency_key text, rate_limit_key text, priority int, schedule_id text, scheduled_at bigint,
    deadline bigint, wake_at bigint, now bigint)
), inserted AS (
  INSERT INTO ${s}.instances (id, workflow, version, status, input, parent_id, parent_close, concurrency_key,
    rate_limit_key, priority, schedule_id, scheduled_at, deadline, wake_at, signal_cursor, created_at, updated_at)
  SELECT id, workflow, version, 'pending', input::json, parent_id, parent_close, concurrency_key, rate_limit_key, priority,
    schedule_id, scheduled_at, deadline, wake_at, (SELECT coalesce(max(id), 0) FROM ${s}.signals), now, now
  FROM input ORDER BY ord
  ON CONFLICT (id) DO NOTHING
  RETURNING ${instanceColumns()}
), woke AS (
  SELECT ${notify('$2')} AS notified WHERE EXISTS (SELECT 1 FROM inserted WHERE wake_at <= created_at)
)
SELECT true AS created, n.*, (SELECT count(*) FROM woke) AS notified FROM inserted n
UNION ALL
SELECT false, ${instanceColumns('e')}, NULL FROM ${s}.instances e
WHERE e.id IN (SELECT id FROM input) AND e.id NOT IN (SELECT id FROM inserted)`;
  }

  create(init: NewWorkflowInstance): Promise<Created> {
    return new Promise<Created>((resolve, reject) => {
      this.queue.push({ init, resolve, reject });
      // Callers in the same turn (`Promise.all` over starts) join the first batch.
      if (!this.running) {
        this.running = true;
        queueMicrotask(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.send(this.queue.splice(0, BATCH));
    } finally {
      this.running = false;
    }
  }

  private async send(batch: Waiting[]): Promise<void> {
    // One row per id: a repeated id in the batch gets the stored instance, as a concurrent create would.
    const first = new Map<string, Waiting>();
    for (const waiting of batch) if (!first.has(waiting.init.id)) first.set(waiting.init.id, waiting);
    const rows = [...first.values()].map(({ init }, ord) => ({
      ord,
      id: init.id,
      workflow: init.workflow,
      version: init.version,
      input: toJson(init.input ?? null),
      parent_id: init.parentId ?? null,
      parent_close: init.parentClose ?? null,
      concurrency_key: init.concurrencyKey ?? null,
      rate_limit_key: init.rateLimitKey ?? null,
      priority: init.priority ?? 0,
      schedule_id: init.scheduleId ?? null,
      scheduled_at: init.scheduledAt ?? null,
      deadline: init.deadline ?? null,
      wake_at: init.wakeAt ?? init.now,
      now: init.now,
    }));
    let found: Map<string, Created>;
    try {
      const { rows: result } = await this.executor.query(this.sql, [JSON.stringify(rows), this.channel]);
      found = new Map(result.map((row) => [String(row.id), { instance: toInstance(row), created: toBoolean(row.created) }]));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    for (const waiting of batch) {
      const result = found.get(waiting.init.id);
      const creator = first.get(waiting.init.id) === waiting;
      if (result) {
        waiting.resolve(creator ? result : { instance: result.instance, created: false });
        continue;
      }
      // A concurrent create of the id committed after this statement's snapshot.
      this.reread(waiting.init.id).then(
        (instance) =>
          instance
            ? waiting.resolve({ instance, created: false })
            : waiting.reject(new Error(`PostgresWorkflowStore: instance ${JSON.stringify(waiting.init.id)} was neither created nor found.`)),
        (error: unknown) => waiting.reject(error),
      );
    }
  }
}
