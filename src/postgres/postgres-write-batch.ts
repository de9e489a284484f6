import { notify, notifyEnded } from './postgres-sql-fragments.js';
import { FINISHED, UNFINISHED } from '../sql/status-lists.js';
import { quoteIdentifier } from '../sql/schema-name.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { StatementBatcher } from '../sql/statement-batcher.js';
import type { WriteRow } from '../sql/instance-params.js';
import { FINISHED_STATUSES, type WorkflowJournalEntry, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowWrite } from '../storage/workflow-store.js';
import { statementsByShape, type NamedStatement, type WriteShape } from './postgres-write-statements.js';

/**
 * A `write()` with its payloads already made JSON text, so nothing left can fail on a value. The
 * batch takes those that neither send a signal nor register waits: what an execution writes most.
 */
export interface PreparedWrite {
  id: string;
  token: string;
  write: WorkflowWrite;
  shape: WriteShape;
  /** The journal entries it upserts, each name once (the last entry of a name), in first-write order. */
  distinct: readonly WorkflowJournalEntry[];
  /** `distinct` as a JSON array. */
  entries: string;
  /** The write as a batch row (`writeRow()`): output, error and custom status as JSON text. */
  row: WriteRow;
  /** The signal's payload as JSON text, or `null` without a signal (such a write is never batched). */
  signalPayload: string | null;
}

/** How the writes of a batch use one optional part of `write()`: none of them, every one, or some. */
const enum Use {
  None = 0,
  All = 1,
  Some = 2,
}

/** The optional parts of the writes of a batch (what its statement is made of). */
interface BatchShape {
  status: Use;
  output: Use;
  error: Use;
  customStatus: Use;
  release: Use;
  /** The writes that change the row besides its journal (so its `updated_at`). */
  touched: Use;
  /** Some write releases its instance in a status that may be due (not a finished one): the wake-up. */
  wakes: boolean;
  /** Some write ends its instance: the ends' notification. */
  ends: boolean;
}

/** A value a batch statement takes: one array per column of the writes, then the entries. */
type BatchParam =
  | 'ids'
  | 'tokens'
  | 'counts'
  | 'now'
  | 'status'
  | 'setStatus'
  | 'output'
  | 'setOutput'
  | 'error'
  | 'setError'
  | 'customStatus'
  | 'setCustomStatus'
  | 'release'
  | 'wakeAt'
  | 'entryWrite'
  | 'entryName'
  | 'entryPosition'
  | 'entryJson'
  | 'channel';

/** The batch values that are a column of the writes' rows (`writeRow()`). */
const ROW_COLUMNS = {
  counts: 'count',
  status: 'status',
  setStatus: 'set_status',
  output: 'output',
  setOutput: 'set_output',
  error: 'error',
  setError: 'set_error',
  customStatus: 'custom_status',
  setCustomStatus: 'set_custom',
  release: 'release',
  wakeAt: 'wake_at',
} as const satisfies Partial<Record<BatchParam, keyof WriteRow>>;

/** Whether `status` ends an instance (`FINISHED_STATUSES`). */
const isFinished = (status: WorkflowStatus | undefined) => status !== undefined && FINISHED_STATUSES.includes(status);

/**
 * The writes of executions running at the same time (a step's result before the next step runs,
 * an instance's end), as one statement per batch (see `StatementBatcher`). Writes that take the
 * topic locks (a signal, waits to register) go alone, in a statement each. Each write still lands
 * only while its own token holds its instance's lease and reports whether it did; the store sends
 * one instance's writes one after another (`inOrder()`), so an instance appears once per batch.
 * The release rule is `write()`'s with no waits: due now when a cancel waits for a suspended
 * instance, else the release's `wakeAt`.
 *
 * The statement is made for what the batch's writes hold (`BatchShape`, built on first use): a
 * column no write changes is not in it, one every write changes is set without a per-row test, and
 * a notification no write can cause is not computed. A batch of step results alone (what an
 * execution writes most) updates `journal_seq` and upserts the journal, nothing else.
 */
export class PostgresWriteBatch {
  private readonly batcher = new StatementBatcher<PreparedWrite, boolean>({
    send: (writes) => this.send(writes),
    single: (write) => this.single(write),
    max: 200,
    parallel: 2,
  });
  private readonly statements: (shape: BatchShape) => NamedStatement<BatchParam>;

  constructor(
    private readonly executor: SqlExecutor,
    schema: string,
    private readonly channel: string,
    /** A batch of one goes as the plain single-instance statement: it is cheaper for the server. */
    private readonly single: (write: PreparedWrite) => Promise<boolean>,
  ) {
    this.statements = batchStatements(schema);
  }

  write(write: PreparedWrite): Promise<boolean> {
    return this.batcher.add(write);
  }

  private async send(writes: PreparedWrite[]): Promise<boolean[]> {
    const { sql, params } = this.statements(shapeOf(writes));
    const { rows: landed } = await this.executor.query(sql, batchValues(writes, params, this.channel));
    const ids = new Set(landed.map((row) => String(row.id)));
    return writes.map((write) => ids.has(write.id));
  }
}

function use(writes: readonly PreparedWrite[], has: (write: PreparedWrite) => boolean): Use {
  let count = 0;
  for (const write of writes) if (has(write)) count++;
  return count === 0 ? Use.None : count === writes.length ? Use.All : Use.Some;
}

function shapeOf(writes: readonly PreparedWrite[]): BatchShape {
  const changes = ({ shape }: PreparedWrite) =>
    shape.status || shape.output || shape.error || shape.customStatus || shape.release;
  return {
    status: use(writes, ({ shape }) => shape.status),
    output: use(writes, ({ shape }) => shape.output),
    error: use(writes, ({ shape }) => shape.error),
    customStatus: use(writes, ({ shape }) => shape.customStatus),
    release: use(writes, ({ shape }) => shape.release),
    touched: use(writes, changes),
    wakes: writes.some(({ write }) => write.release !== undefined && !isFinished(write.status)),
    ends: writes.some(({ write }) => isFinished(write.status)),
  };
}

/**
 * The values of `params` for `writes`: an array per column of the writes, one element per write in
 * batch order (`null` in the rows that don't set the column, beside its `set` flag), or per
 * journal entry.
 */
function batchValues(writes: readonly PreparedWrite[], params: readonly BatchParam[], channel: string): unknown[] {
  const column = <T>(value: (write: PreparedWrite) => T): T[] => {
    const values = new Array<T>(writes.length);
    for (let index = 0; index < writes.length; index++) values[index] = value(writes[index]!);
    return values;
  };
  let entries: { write: number[]; name: string[]; position: number[] } | undefined;
  /** Each entry's write (from 1), name and position in its write. */
  const entryRows = () => {
    if (entries) return entries;
    entries = { write: [], name: [], position: [] };
    for (let index = 0; index < writes.length; index++) {
      const { distinct } = writes[index]!;
      for (let position = 0; position < distinct.length; position++) {
        entries.write.push(index + 1);
        entries.name.push(distinct[position]!.name);
        entries.position.push(position + 1);
      }
    }
    return entries;
  };
  /** Every entry, as one JSON array: each write's entries are already one, whose elements join it as text. */
  const entryJson = () => {
    let json = '';
    for (const { entries: text } of writes)
      if (text.length > 2) json += `${json === '' ? '' : ','}${text.slice(1, -1)}`;
    return `[${json}]`;
  };
  const value = (name: BatchParam): unknown => {
    switch (name) {
      case 'ids':
        return column(({ id }) => id);
      case 'tokens':
        return column(({ token }) => token);
      case 'now':
        return column(({ row }) =>
          row.set_status || row.set_output || row.set_error || row.set_custom || row.release ? row.now : null,
        );
      case 'entryWrite':
        return entryRows().write;
      case 'entryName':
        return entryRows().name;
      case 'entryPosition':
        return entryRows().position;
      case 'entryJson':
        return entryJson();
      case 'channel':
        return channel;
      default: {
        const key = ROW_COLUMNS[name];
        return column(({ row }) => row[key]);
      }
    }
  };
  return params.map(value);
}

/**
 * The batch statements of one schema, one per `BatchShape`, built on first use. The writes come as
 * arrays, unnested in id order (so two batches that share rows lock them in the same order), and
 * each instance row is found by its key: the array's row count is hidden from the planner behind
 * a `LIMIT` of its length (an estimate of one row), so that it joins `instances` through its
 * primary key in a nested loop even in a plan made while the table was small, which a prepared
 * statement keeps after the table has grown. (An estimate of several rows makes a hash join over
 * a scan of the whole table look cheaper on a table that has never been vacuumed, and that plan
 * would then read every instance on every batch.)
 */
function batchStatements(schemaName: string): (shape: BatchShape) => NamedStatement<BatchParam> {
  const s = quoteIdentifier(schemaName);
  const key = (shape: BatchShape) =>
    `${shape.status}${shape.output}${shape.error}${shape.customStatus}${shape.release}${shape.touched}${+shape.wakes}${+shape.ends}`;
  return statementsByShape<BatchShape, BatchParam>(key, (shape, p) => {
    // The write rows: r.<column>, each from an array of the batch.
    const columns: Array<[string, string]> = [
      ['id', `${p('ids')}::text[]`],
      ['token', `${p('tokens')}::text[]`],
    ];
    columns.push(['count', `${p('counts')}::integer[]`]);
    const sets = ['journal_seq = i.journal_seq + r.count'];
    const returning = ['i.id', 'i.journal_seq', 'r.count', 'r.k'];
    /** A column set from the write's value: by every write, or by those whose flag says so. */
    const set = (use: Use, column: string, value: BatchParam, flag: BatchParam, type: string) => {
      if (use === Use.None) return;
      columns.push([column, `${p(value)}::${type}[]`]);
      if (use === Use.All) {
        sets.push(`${column} = r.${column}`);
      } else {
        columns.push([`set_${column}`, `${p(flag)}::boolean[]`]);
        sets.push(`${column} = CASE WHEN r.set_${column} THEN r.${column} ELSE i.${column} END`);
      }
    };
    set(shape.status, 'status', 'status', 'setStatus', 'text');
    set(shape.output, 'output', 'output', 'setOutput', 'json');
    set(shape.error, 'error', 'error', 'setError', 'json');
    set(shape.customStatus, 'custom_status', 'customStatus', 'setCustomStatus', 'json');
    if (shape.touched !== Use.None) {
      columns.push(['now', `${p('now')}::bigint[]`]);
      sets.push(`updated_at = ${shape.touched === Use.All ? 'r.now' : 'coalesce(r.now, i.updated_at)'}`);
    }
    if (shape.release !== Use.None) {
      columns.push(['wake_at', `${p('wakeAt')}::bigint[]`]);
      const status =
        shape.status === Use.None
          ? 'i.status'
          : shape.status === Use.All
            ? 'r.status'
            : 'CASE WHEN r.set_status THEN r.status ELSE i.status END';
      const wakeAt = `CASE WHEN (i.cancel_requested AND ${status} = 'suspended') OR (i.terminate_requested AND ${status} = 'compensating') THEN r.now ELSE r.wake_at END`;
      if (shape.release === Use.All) {
        sets.push(`wait_topics = '{}'::text[]`, 'lease_token = NULL', 'lease_until = NULL', `wake_at = ${wakeAt}`);
      } else {
        columns.push(['release', `${p('release')}::boolean[]`]);
        sets.push(
          `wait_topics = CASE WHEN r.release THEN '{}'::text[] ELSE i.wait_topics END`,
          'lease_token = CASE WHEN r.release THEN NULL ELSE i.lease_token END',
          'lease_until = CASE WHEN r.release THEN NULL ELSE i.lease_until END',
          `wake_at = CASE WHEN r.release THEN ${wakeAt} ELSE i.wake_at END`,
        );
      }
    }
    const ctes = [];
    const selected = ['id'];
    if (shape.wakes) {
      returning.push(
        'i.status',
        'i.wake_at',
        'r.now',
        shape.release === Use.All ? 'true AS released' : 'r.release AS released',
      );
      ctes.push(`woke AS (
  SELECT ${notify(p('channel'))} WHERE EXISTS (SELECT 1 FROM target WHERE released AND wake_at <= now AND status IN ${UNFINISHED})
)`);
      selected.push('(SELECT count(*) FROM woke) AS notified');
    }
    if (shape.ends) {
      // Only when a `handle.result()` asked for it: `notify_end` as the row version the UPDATE
      // locked has it (see notifyEnded()).
      returning.push(
        shape.status === Use.All
          ? 'r.status AS sent_status'
          : 'CASE WHEN r.set_status THEN r.status END AS sent_status',
        'i.notify_end',
      );
      ctes.push(`ended AS (
  SELECT ${notifyEnded(p('channel'), 'id')} FROM target WHERE sent_status IN ${FINISHED} AND notify_end
)`);
      selected.push('(SELECT count(*) FROM ended) AS ended');
    }
    return `WITH target AS (
  UPDATE ${s}.instances i SET ${sets.join(', ')}
  FROM (
    SELECT * FROM unnest(${columns.map(([, array]) => array).join(', ')}) WITH ORDINALITY AS r(${columns.map(([name]) => name).join(', ')}, k)
    ORDER BY r.id COLLATE "C" LIMIT cardinality(${p('ids')}::text[])
  ) AS r
  WHERE i.id = r.id AND i.lease_token = r.token
  RETURNING ${returning.join(', ')}
), entries AS (
  INSERT INTO ${s}.journal (instance_id, name, seq, entry)
  SELECT t.id, e.name, t.journal_seq - t.count + e.position, e.entry
  FROM target t JOIN ROWS FROM (unnest(${p('entryWrite')}::integer[]), unnest(${p('entryName')}::text[]),
    unnest(${p('entryPosition')}::integer[]), json_array_elements(${p('entryJson')}::json)) AS e(k, name, position, entry) ON e.k = t.k
  ON CONFLICT (instance_id, name) DO UPDATE SET entry = EXCLUDED.entry
)${ctes.map((cte) => `, ${cte}`).join('')}
SELECT ${selected.join(', ')} FROM target`;
  });
}
