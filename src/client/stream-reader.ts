import { WorkflowNotFoundError } from '../errors/workflow-not-found.error.js';
import { checkKnownKeys } from '../options/known-keys.js';
import { FINISHED_STATUSES, type WorkflowStatus } from '../storage/workflow-instance.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { checkStreamName } from '../storage/workflow-stream-storage.js';
import type { WorkflowStreamRecord } from '../storage/workflow-store-streams.js';

/** A value of a stream, as `client.readStream()` yields it. */
export interface WorkflowStreamValue<T = unknown> {
  /** Its place in the stream (1, 2, ...): pass the last one seen as `after` to resume. */
  seq: number;
  value: T;
  /** The step that wrote it (`null`: the workflow body, exactly once). */
  step: string | null;
  /** That step's attempt (`null` for the body). */
  attempt: number | null;
  discarded?: undefined;
}

/**
 * The mark that a step attempt failed: the values it wrote (the items before this one with the same
 * `step` and `attempt`) are void. Drop them from what you show; the step's next attempt writes anew.
 */
export interface WorkflowStreamDiscard {
  seq: number;
  discarded: { step: string; attempt: number };
  value?: undefined;
}

/** What `client.readStream()` yields. */
export type WorkflowStreamItem<T = unknown> = WorkflowStreamValue<T> | WorkflowStreamDiscard;

/** `client.readStream()`'s options. */
export interface WorkflowReadStreamOptions {
  /** Start after this seq (the last one a reader saw, or an SSE `Last-Event-ID`). Default 0: from the first. */
  after?: number;
  /** Stops the reader: the iteration ends. */
  signal?: AbortSignal;
  /**
   * How often to look for new values while none come, in ms: `minDelay` after a value, doubling to
   * `maxDelay`. On a store that notifies appends (PostgreSQL, in-memory) a look also happens at once on
   * each notification, and `maxDelay` is only the safety net. Default `{ minDelay: 10, maxDelay: 250 }`
   * without notifications, `{ minDelay: 1000, maxDelay: 1000 }` with them.
   */
  poll?: { minDelay: number; maxDelay: number };
}

const PAGE = 200;
const FINISHED: ReadonlySet<WorkflowStatus> = new Set(FINISHED_STATUSES);

/** `options.after`, checked. */
export function parseReadStreamOptions(
  id: unknown,
  name: unknown,
  options: WorkflowReadStreamOptions,
): { after: number; poll: WorkflowReadStreamOptions['poll'] } {
  if (typeof id !== 'string' || id === '')
    throw new TypeError(`readStream(): the instance id must be a non-empty string.`);
  checkStreamName(name);
  checkKnownKeys(options, ['after', 'signal', 'poll'], 'readStream() options');
  const after = options.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new TypeError(`readStream(): \`after\` must be a seq (an integer, 0 or more), got ${String(after)}.`);
  }
  const { poll } = options;
  if (poll !== undefined && !(poll.minDelay > 0 && poll.maxDelay >= poll.minDelay)) {
    throw new TypeError('readStream(): `poll` must be { minDelay, maxDelay } in ms, with 0 < minDelay <= maxDelay.');
  }
  return { after, poll };
}

/**
 * A live reader of one stream (`client.readStream()`): pages through what is stored, then waits for
 * more (a notification or a poll) until the stream is closed and read to its end, or the instance
 * has ended and nothing more came. `return()` (a `break` out of `for await`) stops it at once,
 * even while it waits.
 */
export class WorkflowStreamReader<T> implements AsyncIterableIterator<WorkflowStreamItem<T>> {
  private after: number;
  private readonly buffer: WorkflowStreamItem<T>[] = [];
  private done = false;
  private started = false;
  private stopListening: (() => Promise<void>) | null = null;
  private notified = false;
  private wake: (() => void) | null = null;
  private delay = 0;
  private poll = { minDelay: 10, maxDelay: 250 };
  /** The instance ended: one more read, then the end. */
  private instanceEnded = false;
  private lastStatusCheck = 0;
  private readonly pollGiven: { minDelay: number; maxDelay: number } | undefined;

  constructor(
    private readonly storage: WorkflowStorage,
    private readonly id: string,
    private readonly name: string,
    options: { after: number; poll?: { minDelay: number; maxDelay: number }; signal?: AbortSignal },
  ) {
    this.after = options.after;
    this.pollGiven = options.poll;
    options.signal?.addEventListener('abort', () => void this.return(), { once: true });
    if (options.signal?.aborted) this.done = true;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<WorkflowStreamItem<T>>> {
    try {
      if (!this.started) await this.start();
      while (!this.done) {
        const item = this.buffer.shift();
        if (item) return { value: item, done: false };
        await this.fill();
      }
    } catch (error) {
      await this.return();
      throw error;
    }
    return { value: undefined, done: true };
  }

  async return(): Promise<IteratorResult<WorkflowStreamItem<T>>> {
    this.done = true;
    this.wake?.();
    const stop = this.stopListening;
    this.stopListening = null;
    await stop?.().catch(() => undefined);
    return { value: undefined, done: true };
  }

  private async start(): Promise<void> {
    this.started = true;
    if (!(await this.storage.get(this.id)))
      throw new WorkflowNotFoundError(`No workflow instance has the id "${this.id}".`);
    this.stopListening = await this.storage.streams.listen((id, stream) => {
      if (id !== undefined && (id !== this.id || stream !== this.name)) return;
      this.notified = true;
      this.wake?.();
    });
    this.poll = this.pollGiven ?? (this.stopListening ? { minDelay: 1000, maxDelay: 1000 } : this.poll);
    this.delay = this.poll.minDelay;
    if (this.done) await this.return();
  }

  /** One read, then (when it brought nothing) a wait for a notification or the next poll. */
  private async fill(): Promise<void> {
    this.notified = false;
    const page = await this.storage.streams.read({ id: this.id, stream: this.name, after: this.after, limit: PAGE });
    for (const record of page.items) this.buffer.push(toItem<T>(record));
    if (page.items.length > 0) {
      this.after = page.items.at(-1)!.seq;
      this.delay = this.poll.minDelay;
      return;
    }
    if (page.closed && this.after >= page.lastSeq) return void (this.done = true);
    if (this.instanceEnded) return void (this.done = true);
    if (Date.now() - this.lastStatusCheck >= Math.min(this.poll.maxDelay, 1000)) {
      this.lastStatusCheck = Date.now();
      const instance = await this.storage.get(this.id);
      // Ended (or deleted): what it wrote is all stored; read once more, then stop.
      if (!instance || FINISHED.has(instance.status)) {
        this.instanceEnded = true;
        return;
      }
    }
    if (this.notified || this.done) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.delay);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = null;
    this.delay = Math.min(this.delay * 2, this.poll.maxDelay);
  }
}

function toItem<T>(record: WorkflowStreamRecord): WorkflowStreamItem<T> {
  if (record.kind === 'discard')
    return { seq: record.seq, discarded: { step: record.step!, attempt: record.attempt! } };
  return { seq: record.seq, value: record.value as T, step: record.step, attempt: record.attempt };
}
