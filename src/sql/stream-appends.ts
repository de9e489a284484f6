import type { SqlExecutor } from './sql-executor.js';
import { fromJson, toBoolean, toJson, toNullableNumber, toNullableString, toNumber } from './workflow-rows.js';
import {
  streamValueText,
  type WorkflowStreamAppend,
  type WorkflowStreamAppendResult,
  type WorkflowStreamPage,
  type WorkflowStreamQuery,
  type WorkflowStreamRecord,
} from '../storage/workflow-store-streams.js';

/** A stream's row, as an append reads it under its lock. */
export interface StreamHead {
  lastSeq: number;
  values: number;
  bytes: number;
  closed: boolean;
}

/** A stream's row (`last_seq`, `value_count`, `bytes`, `closed`) as every dialect reads it. */
export function toStreamHead(row: Record<string, unknown>): StreamHead {
  return {
    lastSeq: toNumber(row.last_seq),
    values: toNumber(row.value_count),
    bytes: toNumber(row.bytes),
    closed: toBoolean(row.closed),
  };
}

/** What a reader needs of a stream's row: `last_seq` and `closed`. */
export function toStreamTail(row: Record<string, unknown>): { lastSeq: number; closed: boolean } {
  return { lastSeq: toNumber(row.last_seq), closed: toBoolean(row.closed) };
}

/** A stored item as `readStream()` returns it. */
export function toStreamRecord(row: Record<string, unknown>): WorkflowStreamRecord {
  return {
    seq: toNumber(row.seq),
    kind: row.kind as WorkflowStreamRecord['kind'],
    value: fromJson(row.value),
    step: toNullableString(row.step),
    attempt: toNullableNumber(row.attempt),
    createdAt: toNumber(row.created_at),
  };
}

/** One item as `insertItems()` stores it: `value` is JSON text (or `null` for a discard). */
export interface StreamItemRow {
  seq: number;
  kind: 'value' | 'discard';
  value: string | null;
  bodyIndex: number | null;
  step: string | null;
  attempt: number | null;
  createdAt: number;
}

/** A dialect's statements of `appendStream()` and `readStream()`, which the functions below run in their order. */
export interface StreamStatements {
  /**
   * Creates the stream's row if missing and locks it until the transaction ends, in one step that
   * takes the write lock at once (a read lock first, upgraded later, deadlocks two appenders).
   * `null` when the instance does not exist (or a delete of it is committing: see `missingInstance`).
   */
  lockStream(tx: SqlExecutor, id: string, stream: string): Promise<StreamHead | null>;
  /** The seqs stored for these body indexes (read under the lock). */
  bodySeqs(tx: SqlExecutor, id: string, stream: string, indexes: number[]): Promise<Map<number, number>>;
  insertItems(tx: SqlExecutor, id: string, stream: string, rows: StreamItemRow[]): Promise<void>;
  updateHead(tx: SqlExecutor, id: string, stream: string, head: StreamHead): Promise<void>;
  /** Optional: tells listeners in every process, at commit (PostgreSQL's NOTIFY). */
  notify?(tx: SqlExecutor, id: string, stream: string): Promise<void>;
  /** Whether `error` is the foreign key refusing a row of an instance that is gone. */
  missingInstance(error: unknown): boolean;
  /** `last_seq` and `closed`, or `null` for an unknown stream. */
  readHead(executor: SqlExecutor, id: string, stream: string): Promise<{ lastSeq: number; closed: boolean } | null>;
  readItems(executor: SqlExecutor, query: WorkflowStreamQuery): Promise<WorkflowStreamRecord[]>;
}

/** What an append does to a stream, decided under its lock by `planStreamAppend()`. */
export interface StreamAppendPlan {
  result: WorkflowStreamAppendResult;
  /** The items to insert ([] when refused). */
  rows: StreamItemRow[];
  /** The stream's row after the append, or `null` when nothing changes (refused, or all repeats). */
  next: StreamHead | null;
}

/** The indexes of `append`'s body writes, whose stored seqs the plan needs. */
export function bodyIndexes(append: WorkflowStreamAppend): number[] {
  return append.items.flatMap((item) => (item.bodyIndex === null ? [] : [item.bodyIndex]));
}

/**
 * The append's effect on a stream whose row is `head` and whose body writes `stored` holds (both
 * read under the stream's lock): every SQL store decides it here, so they refuse alike.
 */
export function planStreamAppend(
  head: StreamHead,
  stored: Map<number, number>,
  append: WorkflowStreamAppend,
): StreamAppendPlan {
  // Each value's text first: one no store keeps fails the call before anything is written.
  const texts = append.items.map((item) => (item.kind === 'value' ? valueText(item.value) : null));
  const refused = (why: 'closed' | 'values' | 'bytes'): StreamAppendPlan => ({
    result: { seqs: [], refused: why },
    rows: [],
    next: null,
  });
  const seqs: number[] = [];
  const rows: StreamItemRow[] = [];
  const next: StreamHead = { ...head };
  const seen = new Map(stored);
  for (const [i, item] of append.items.entries()) {
    const seq = item.bodyIndex === null ? undefined : seen.get(item.bodyIndex);
    if (seq !== undefined) {
      seqs.push(seq);
      continue;
    }
    if (head.closed) return refused('closed');
    const text = texts[i];
    if (text) {
      next.values++;
      next.bytes += text.bytes;
      if (next.values > append.limits.maxValues) return refused('values');
      if (next.bytes > append.limits.maxBytes) return refused('bytes');
    }
    next.lastSeq++;
    seqs.push(next.lastSeq);
    rows.push({
      seq: next.lastSeq,
      kind: item.kind,
      value: text ? text.text : null,
      bodyIndex: item.bodyIndex,
      step: item.step,
      attempt: item.attempt,
      createdAt: append.now,
    });
    // A body index written twice in one append is stored once.
    if (item.bodyIndex !== null) seen.set(item.bodyIndex, next.lastSeq);
  }
  const closing = append.close && !head.closed;
  next.closed = head.closed || append.close;
  return { result: { seqs, refused: null }, rows, next: rows.length > 0 || closing ? next : null };
}

/** `WorkflowStore.appendStream()` on a SQL store: one transaction under the stream's row lock. */
export async function appendStream(
  executor: SqlExecutor,
  statements: StreamStatements,
  append: WorkflowStreamAppend,
): Promise<WorkflowStreamAppendResult | null> {
  const { id, stream } = append;
  // Refused values throw here, before a connection is taken.
  planStreamAppend({ lastSeq: 0, values: 0, bytes: 0, closed: false }, new Map(), {
    ...append,
    limits: { maxValues: Infinity, maxBytes: Infinity },
  });
  try {
    return await executor.transaction(async (tx) => {
      const head = await statements.lockStream(tx, id, stream);
      if (!head) return null;
      const indexes = bodyIndexes(append);
      const stored =
        indexes.length > 0 ? await statements.bodySeqs(tx, id, stream, indexes) : new Map<number, number>();
      const plan = planStreamAppend(head, stored, append);
      if (plan.next) {
        if (plan.rows.length > 0) await statements.insertItems(tx, id, stream, plan.rows);
        await statements.updateHead(tx, id, stream, plan.next);
        await statements.notify?.(tx, id, stream);
      }
      return plan.result;
    });
  } catch (error) {
    if (statements.missingInstance(error)) return null;
    throw error;
  }
}

/** The value's JSON text (refused as `toJson()` refuses it) and its size as `streamValueText()` counts it. */
function valueText(value: unknown): { text: string; bytes: number } {
  const text = toJson(value ?? null)!;
  return { text, bytes: streamValueText(value).bytes };
}

/** `WorkflowStore.readStream()` on a SQL store: the stream's row first, then its items (see the contract). */
export async function readStream(
  executor: SqlExecutor,
  statements: StreamStatements,
  query: WorkflowStreamQuery,
): Promise<WorkflowStreamPage> {
  const head = await statements.readHead(executor, query.id, query.stream);
  if (!head) return { items: [], closed: false, lastSeq: 0 };
  const items = query.after >= head.lastSeq && head.closed ? [] : await statements.readItems(executor, query);
  return { items, closed: head.closed, lastSeq: head.lastSeq };
}
