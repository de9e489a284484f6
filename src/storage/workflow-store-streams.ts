/**
 * The streams' part of the store contract (`ctx.stream()`, `client.readStream()`): one append-only
 * log per instance and stream name, each item with a `seq` (1, 2, ...) that only grows. Optional,
 * so a store of your own keeps working without it (the engine then refuses `ctx.stream()` with a
 * clear error); every store we ship has it.
 */
export interface WorkflowStreamStore {
  /**
   * Appends `append.items` (and, with `close`, closes the stream) all or nothing, in one
   * transaction under the stream's lock, so items become visible in `seq` order: a reader that read
   * up to `seq` N and resumes after N never misses an item committed later with a lower `seq` (with
   * seqs from a sequence or `AUTO_INCREMENT`, N + 1 may commit before N). Per item:
   *
   * - with a `bodyIndex` (a write of the workflow's body: its place among the body's writes to
   *   this stream) that the stream already holds, nothing is stored and the stored item's `seq` is
   *   answered: a replay of the body writes each value once, however often it runs;
   * - otherwise the item gets the stream's next `seq`. On a closed stream that is refused
   *   (`refused: 'closed'`), as is going past `limits` (`'values'`: more value items than
   *   `maxValues`; `'bytes'`: more than `maxBytes` of value JSON text, as UTF-8), storing nothing.
   *
   * Resolves to `null`, storing nothing, when the instance does not exist: a stream never outlives
   * its instance (a `delete()` or `purge()` takes its streams with it, and an append racing one
   * either lands before it, and goes with it, or finds the instance gone).
   */
  appendStream?(append: WorkflowStreamAppend): Promise<WorkflowStreamAppendResult | null>;

  /**
   * One page of the stream: up to `limit` items with `seq > after`, in `seq` order, and the stream's
   * state read *before* them (`closed`, `lastSeq`): so a reader that sees `closed` and has read up to
   * `lastSeq` has every item (read after, the page could miss items a close committed with). An
   * unknown stream (or instance) reads as `{ items: [], closed: false, lastSeq: 0 }`.
   */
  readStream?(query: WorkflowStreamQuery): Promise<WorkflowStreamPage>;

  /**
   * Optional: calls `listener` with the instance id and stream name after an append to it commits,
   * in any process (PostgreSQL: NOTIFY), and with no arguments when appends may have been missed
   * (a reconnection): readers then read at once instead of at their next poll. Polling stays the
   * safety net. Resolves to a function that stops it.
   */
  listenForStreams?(listener: (id?: string, stream?: string) => void): Promise<() => Promise<void>>;
}

/** One item to append: a value, or the mark that a step attempt's values are void. */
export interface NewWorkflowStreamItem {
  /** `'value'`; `'discard'`: the attempt `attempt` of step `step` failed, and the values it wrote are void. */
  kind: 'value' | 'discard';
  /** The value (a JSON value, encoded by the codec when one is configured); `null` for a discard. */
  value: unknown;
  /** A body write's place among the body's writes to the stream (0, 1, ...); `null` for a step's. */
  bodyIndex: number | null;
  /** The step that wrote it, or `null` for the body. */
  step: string | null;
  /** That step's attempt (1, 2, ...), or `null` for the body. */
  attempt: number | null;
}

/** What `appendStream()` takes. */
export interface WorkflowStreamAppend {
  id: string;
  stream: string;
  /** In order; may be empty (with `close`). */
  items: NewWorkflowStreamItem[];
  /** Close the stream after the items (closing a closed stream changes nothing). */
  close: boolean;
  now: number;
  limits: WorkflowStreamLimits;
}

/** How much one stream may hold; a discard counts in neither. */
export interface WorkflowStreamLimits {
  maxValues: number;
  maxBytes: number;
}

/** What `appendStream()` resolves to. */
export interface WorkflowStreamAppendResult {
  /** Each item's `seq` (a body write stored before: its stored `seq`); `[]` when refused. */
  seqs: number[];
  /** Why nothing was stored, or `null`. */
  refused: 'closed' | 'values' | 'bytes' | null;
}

/** What `readStream()` takes. */
export interface WorkflowStreamQuery {
  id: string;
  stream: string;
  /** Items with a greater `seq` (0: from the first). */
  after: number;
  limit: number;
}

/** A stored item. */
export interface WorkflowStreamRecord {
  seq: number;
  kind: 'value' | 'discard';
  value: unknown;
  step: string | null;
  attempt: number | null;
  createdAt: number;
}

/** What `readStream()` resolves to. */
export interface WorkflowStreamPage {
  items: WorkflowStreamRecord[];
  closed: boolean;
  /** The stream's last `seq` when the page was read (0: empty or unknown). */
  lastSeq: number;
}

/** The JSON text of a stream value and its size in UTF-8 bytes, as every store counts it against `maxBytes`. */
export function streamValueText(value: unknown): { text: string; bytes: number } {
  const text = JSON.stringify(value ?? null);
  return { text, bytes: Buffer.byteLength(text, 'utf8') };
}
