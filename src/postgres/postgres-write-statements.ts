import { journalUpsert, notifyDue, notifyEnded } from './postgres-sql-fragments.js';
import { FINISHED, UNFINISHED } from '../sql/status-lists.js';
import { quoteIdentifier } from '../sql/schema-name.js';

/** Which optional parts a `write()` statement has: the SQL differs only by these. */
export interface WriteShape {
  status: boolean;
  output: boolean;
  error: boolean;
  customStatus: boolean;
  release: boolean;
  /** `release.waits` is not empty (the signal check runs). */
  waits: boolean;
  /** A signal is sent in the same statement. */
  signal: boolean;
}

/** A value a `write()` statement takes. */
export type WriteParam =
  | 'id'
  | 'token'
  | 'entries'
  | 'count'
  | 'now'
  | 'status'
  | 'output'
  | 'error'
  | 'customStatus'
  | 'waits'
  | 'wakeAt'
  | 'cursor'
  | 'channel'
  | 'signalName'
  | 'signalKey'
  | 'signalTopic'
  | 'signalDedupe'
  | 'signalPayload';

/** A statement and the names of the values it takes, in parameter order. */
export interface NamedStatement<Param extends string> {
  sql: string;
  params: readonly Param[];
}

/** A `write()` statement and the names of the values it takes, in parameter order. */
export type WriteStatement = NamedStatement<WriteParam>;

/**
 * Statements that differ by a shape, each built on first use and kept under `key(shape)`. `build`
 * names each value it takes with `p(name)`, which gives its `$n` (the same one for a name used
 * again), so the statement comes with its values' names in parameter order.
 */
export function statementsByShape<Shape, Param extends string>(
  key: (shape: Shape) => string,
  build: (shape: Shape, p: (name: Param) => string) => string,
): (shape: Shape) => NamedStatement<Param> {
  const built = new Map<string, NamedStatement<Param>>();
  return (shape) => {
    const k = key(shape);
    let statement = built.get(k);
    if (statement === undefined) {
      const params: Param[] = [];
      const sql = build(shape, (name) => {
        if (!params.includes(name)) params.push(name);
        return `$${params.indexOf(name) + 1}`;
      });
      statement = { sql, params };
      built.set(k, statement);
    }
    return statement;
  };
}

/**
 * `write()`'s statements for one schema: one per shape, built on first use. Each updates the row
 * only while the token holds its lease, upserts the journal only then, and returns one row (with
 * `notified`) when it wrote. On release it computes the wake-up in the same statement: now when a
 * signal the execution never saw (above its cursor) matches a new wait, or when a cancel waits for
 * a suspended instance to notice it; else the release's `wakeAt`.
 *
 * Each is one statement, never a transaction spanning round trips: where a write needs topic locks
 * (migrations 0003, 0011) the functions take them inside it. The check for a signal above the cursor
 * (`signals_pending()`) never waits while it holds a lock; a write that sends a signal first takes
 * its topic as every signal does (`signal_begin()`, before the row's lock, the order every path
 * uses), then `send_signal()` stores it once the row is known to be this lease's.
 */
export function postgresWriteStatements(schemaName: string): (shape: WriteShape) => WriteStatement {
  const s = quoteIdentifier(schemaName);
  const key = (shape: WriteShape) =>
    `${+shape.status}${+shape.output}${+shape.error}${+shape.customStatus}${+shape.release}${+shape.waits}${+shape.signal}`;
  return statementsByShape<WriteShape, WriteParam>(key, (shape, p) => {
    const [id, token, entries, count] = [p('id'), p('token'), p('entries'), p('count')];
    const sets = [`journal_seq = journal_seq + ${count}`];
    if (shape.status) sets.push(`status = ${p('status')}::text`);
    if (shape.output) sets.push(`output = ${p('output')}`);
    if (shape.error) sets.push(`error = ${p('error')}`);
    if (shape.customStatus) sets.push(`custom_status = ${p('customStatus')}`);
    let notified = 'NULL';
    if (shape.release) {
      const now = p('now');
      const status = shape.status ? p('status') : 'status';
      const pending = shape.waits ? ` OR ${s}.signals_pending(${p('waits')}::text[], ${p('cursor')}::bigint)` : '';
      sets.push(
        `wait_topics = ${p('waits')}::text[]`,
        'lease_token = NULL',
        'lease_until = NULL',
        `wake_at = CASE WHEN (cancel_requested AND ${status} = 'suspended') OR (terminate_requested AND ${status} = 'compensating')${pending} THEN ${now} ELSE ${p('wakeAt')}::bigint END`,
      );
      // Released due now (a hand-back, a signal already there): named, so a worker may claim it by key.
      notified = `CASE WHEN t.wake_at <= ${now} AND t.status IN ${UNFINISHED} THEN ${notifyDue(p('channel'), 't.id')} END`;
    }
    if (shape.status || shape.output || shape.error || shape.customStatus || shape.release)
      sets.push(`updated_at = ${p('now')}`);
    // An instance's end wakes the handles waiting for it in other processes (handle.result()), when
    // one asked for it: `notify_end` as the row version this UPDATE locked has it (see notifyEnded()).
    const ended = shape.status
      ? `CASE WHEN t.status IN ${FINISHED} AND t.notify_end THEN ${notifyEnded(p('channel'), 't.id')} END`
      : 'NULL';
    let lock = '';
    let sent = '';
    if (shape.signal) {
      const topic = p('signalTopic');
      // An uncorrelated subquery: evaluated once, while the row is being matched, before it is locked.
      lock = ` AND (SELECT ${s}.signal_begin(${topic}::text))`;
      sent =
        `, (SELECT f.id FROM ${s}.send_signal(${p('signalName')}::text, ${p('signalKey')}::text, ${topic}::text, ` +
        `${p('signalDedupe')}::text, ${p('signalPayload')}::json, ${p('now')}::bigint, ${p('channel')}::text) f) AS signal_id`;
    }
    return `WITH target AS (
  UPDATE ${s}.instances SET ${sets.join(', ')}
  WHERE id = ${id} AND lease_token = ${token}${lock}
  RETURNING id, journal_seq, wake_at, status, notify_end
), ${journalUpsert(s, entries, count)}
SELECT t.id, ${notified} AS notified, ${ended} AS ended${sent} FROM target t`;
  });
}
