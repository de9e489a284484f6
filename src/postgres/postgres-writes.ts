import { POSTGRES_INPUT } from './key-limits.js';
import { PostgresWriteBatch, type PreparedWrite } from './postgres-write-batch.js';
import {
  postgresWriteStatements,
  type WriteParam,
  type WriteShape,
  type WriteStatement,
} from './postgres-write-statements.js';
import { writeRow } from '../sql/instance-params.js';
import { InstanceWriteQueue } from '../sql/instance-write-queue.js';
import { signalTopic } from '../sql/signal-topic.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { distinctEntries } from '../sql/distinct-entries.js';
import { toJson } from '../sql/workflow-rows.js';
import { journalJson } from '../storage/journal-entry-json.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';

/**
 * The lease holder's writes (`write()`). One statement updates the row (only while `token` holds
 * its lease), upserts the journal, on release computes the wake-up, and sends the write's signal:
 * no explicit transaction. The topic locks it needs (its waits' shared, its signal's exclusive) are
 * taken inside it. Writes that take no topic lock join a batch (`PostgresWriteBatch`); one
 * instance's writes keep their order (`InstanceWriteQueue`).
 */
export class PostgresWrites {
  private readonly sql: (shape: WriteShape) => WriteStatement;
  private readonly batch: PostgresWriteBatch;
  private readonly queue = new InstanceWriteQueue();

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
    private readonly channel: string,
  ) {
    this.sql = postgresWriteStatements(schema);
    this.batch = new PostgresWriteBatch(executor, schema, channel, (one) => this.writeOne(this.executor, one));
  }

  write(id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    let prepared: PreparedWrite;
    try {
      prepared = prepare(id, token, write);
    } catch (error) {
      // A write that can't be stored fails as a rejection, like every other failure of write().
      return Promise.reject(error as Error);
    }
    // Writes that take topic locks go alone: a batch would hold several topics' locks in no set order.
    const batched = !write.signal && !prepared.shape.waits;
    return this.queue.run(id, () => (batched ? this.batch.write(prepared) : this.writeOne(this.executor, prepared)));
  }

  /**
   * A write in a transaction already open on `executor` (`ctx.transaction()`): one statement of
   * that transaction, never batched with other instances' writes (they would wait for its commit).
   */
  async writeIn(executor: SqlExecutor, id: string, token: string, write: WorkflowWrite): Promise<boolean> {
    return this.writeOne(executor, prepare(id, token, write));
  }

  /** One write in a statement of its own (with the topic locks it needs). */
  private async writeOne(executor: SqlExecutor, prepared: PreparedWrite): Promise<boolean> {
    const { id, token, write, shape, row } = prepared;
    const { release, signal } = write;
    const statement = this.sql(shape);
    const values: Record<WriteParam, unknown> = {
      id,
      token,
      entries: prepared.entries,
      count: row.count,
      now: write.now,
      status: write.status,
      output: row.output,
      error: row.error,
      customStatus: row.custom_status,
      waits: release?.waits.map((wait) => signalTopic(wait.name, wait.key)),
      wakeAt: release?.wakeAt,
      cursor: release?.signalCursor,
      channel: this.channel,
      signalName: signal?.name,
      signalKey: signal?.key,
      signalTopic: signal ? signalTopic(signal.name, signal.key) : null,
      signalDedupe: signal?.dedupeId,
      signalPayload: prepared.signalPayload,
    };
    const params = statement.params.map((name) => values[name]);
    return (await executor.query(statement.sql, params)).rows.length > 0;
  }
}

/**
 * Checks the write's keys and makes every payload JSON text, before the write is queued: a value
 * JSON can't carry (a BigInt, a cycle) fails this call alone, before anything is sent, never the
 * batch it would join.
 */
function prepare(id: string, token: string, write: WorkflowWrite): PreparedWrite {
  POSTGRES_INPUT.write(id, write);
  const { release } = write;
  const shape: WriteShape = {
    status: write.status !== undefined,
    output: write.output !== undefined,
    error: write.error !== undefined,
    customStatus: write.customStatus !== undefined,
    release: release !== undefined,
    waits: (release?.waits.length ?? 0) > 0,
    signal: write.signal !== undefined,
  };
  const entries = distinctEntries(write.entries);
  return {
    id,
    token,
    write,
    shape,
    distinct: entries,
    entries: journalJson(entries),
    row: writeRow(id, token, entries.length, write),
    signalPayload: write.signal ? toJson(write.signal.payload ?? null) : null,
  };
}
